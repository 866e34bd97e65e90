//! Resource quantities (`"500m"`, `"1Gi"`, `"1e3"`) written the way Kubernetes writes them
//! back out.
//!
//! Kubernetes never echoes a quantity as sent: it parses it and serializes its canonical
//! form, so `"1000m"` comes back as `"1"`, `"1024Mi"` as `"1Gi"` and `"0.5"` as `"500m"`. The
//! exception is a short, exact value already in a canonical shape, whose text Kubernetes keeps
//! verbatim (`"1Gi"`, `"100m"`, even `"+5"`). The printers show quantities in that same form.
//!
//! The canonical form: the value (rounded up to a whole nano unit) keeps its family of
//! suffix. Decimal values get the largest power-of-1000 suffix (`n u m "" k M G T P E`, or
//! `e<N>` for exponent notation) that leaves an integer mantissa; binary values
//! (`Ki`…`Ei`) get the largest power-of-1024 suffix with an integer mantissa, but fall back
//! to decimal when below 1024 in magnitude or not a whole number.
//!
//! Text that does not parse is shown as it is.

use serde_json::Value;

/// The canonical text of the quantity in `value`; a missing quantity is zero, `"0"`.
pub(crate) fn quantity(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(text)) => canonical(text),
        Some(Value::Number(number)) => canonical(&number.to_string()),
        _ => "0".to_owned(),
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Format {
    DecimalSi,
    BinarySi,
    DecimalExponent,
}

/// A quantity's text split into its parts; `num` has leading zeros removed (and is `"0"`
/// when nothing is left).
struct Parts<'a> {
    negative: bool,
    num: &'a str,
    denom: &'a str,
    suffix: &'a str,
}

/// The canonical text of a quantity string.
pub(crate) fn canonical(text: &str) -> String {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return text.to_owned();
    }
    if trimmed == "0" {
        return "0".to_owned();
    }
    let Some(parts) = split(trimmed) else {
        return trimmed.to_owned();
    };
    let Some((base, exponent, format)) = interpret(parts.suffix) else {
        return trimmed.to_owned();
    };
    if keeps_text(&parts, base, exponent, format) {
        return trimmed.to_owned();
    }
    render(&parts, base, exponent, format).unwrap_or_else(|| trimmed.to_owned())
}

fn split(text: &str) -> Option<Parts<'_>> {
    let bytes = text.as_bytes();
    let end = bytes.len();
    let digit_at = |i: usize| bytes.get(i).is_some_and(u8::is_ascii_digit);
    let mut pos = 0;
    let mut negative = false;
    match bytes.first() {
        Some(b'-') => {
            negative = true;
            pos = 1;
        }
        Some(b'+') => pos = 1,
        _ => {}
    }
    while bytes.get(pos) == Some(&b'0') {
        pos += 1;
    }
    let zero = |negative| Parts {
        negative,
        num: "0",
        denom: "",
        suffix: "",
    };
    if pos >= end {
        return Some(zero(negative));
    }
    let start = pos;
    while digit_at(pos) {
        pos += 1;
    }
    let mut num = text.get(start..pos)?;
    if num.is_empty() {
        num = "0";
    }
    let mut denom = "";
    if bytes.get(pos) == Some(&b'.') {
        pos += 1;
        let start = pos;
        while digit_at(pos) {
            pos += 1;
        }
        denom = text.get(start..pos)?;
    }
    let suffix_start = pos;
    while bytes.get(pos).is_some_and(|b| b"eEinumkKMGTP".contains(b)) {
        pos += 1;
    }
    if matches!(bytes.get(pos), Some(b'-' | b'+')) {
        pos += 1;
    }
    while digit_at(pos) {
        pos += 1;
    }
    if pos < end {
        return None;
    }
    Some(Parts {
        negative,
        num,
        denom,
        suffix: text.get(suffix_start..)?,
    })
}

fn interpret(suffix: &str) -> Option<(u32, i64, Format)> {
    let decimal = |e| Some((10, e, Format::DecimalSi));
    let binary = |e| Some((2, e, Format::BinarySi));
    match suffix {
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "" => decimal(0),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => binary(10),
        "Mi" => binary(20),
        "Gi" => binary(30),
        "Ti" => binary(40),
        "Pi" => binary(50),
        "Ei" => binary(60),
        _ => {
            let rest = suffix
                .strip_prefix(['e', 'E'])
                .filter(|rest| !rest.is_empty())?;
            let exponent: i64 = rest.parse().ok()?;
            // Far beyond anything meaningful; shown as written rather than computed.
            (exponent.abs() <= 1000).then_some((10, exponent, Format::DecimalExponent))
        }
    }
}

/// Whether Kubernetes would keep the text as written: a value small enough for its exact
/// 64-bit fast path whose digits already look canonical.
fn keeps_text(parts: &Parts<'_>, base: u32, exponent: i64, format: Format) -> bool {
    let num_len = i64::try_from(parts.num.len()).unwrap_or(i64::MAX);
    let denom_len = i64::try_from(parts.denom.len()).unwrap_or(i64::MAX);
    let (mut scale, precision, multiplier) = match format {
        Format::DecimalSi | Format::DecimalExponent => (
            exponent,
            18i64.saturating_sub(num_len.saturating_add(denom_len)),
            1i64,
        ),
        Format::BinarySi => {
            if exponent < 0 || !parts.denom.is_empty() || base != 2 {
                return false;
            }
            let precision = 15 - num_len.min(1000) - exponent * 3 / 10 - 1;
            (0, precision, 1i64 << exponent.min(62))
        }
    };
    if precision < 0 {
        return false;
    }
    scale -= denom_len;
    if scale < -9 {
        return false;
    }
    let mut value: i64 = 0;
    for b in parts.num.bytes().chain(parts.denom.bytes()) {
        let digit = i64::from(b - b'0');
        match value.checked_mul(10).and_then(|v| v.checked_add(digit)) {
            Some(v) => value = v,
            None => return false,
        }
    }
    if value.checked_mul(multiplier).is_none() {
        return false;
    }
    match format {
        Format::BinarySi => exponent % 10 == 0 && value & 7 != 0,
        _ => {
            let digits = || parts.num.bytes().chain(parts.denom.bytes());
            let ends_in_000 = digits().rev().take(3).filter(|b| *b == b'0').count() == 3;
            scale % 3 == 0 && !ends_in_000 && digits().next() != Some(b'0')
        }
    }
}

/// An exact non-negative decimal: `digits × 10^(−scale)`.
#[derive(Clone, Copy)]
struct Decimal {
    digits: u128,
    scale: i64,
}

const NANO_SCALE: i64 = 9;
const MAX_POW10: i64 = 38;

fn pow10(n: i64) -> Option<u128> {
    10u128.checked_pow(u32::try_from(n).ok()?)
}

impl Decimal {
    /// `self > limit` for a whole number `limit`.
    fn exceeds(self, limit: u128) -> bool {
        if self.scale <= 0 {
            match pow10(-self.scale).and_then(|p| self.digits.checked_mul(p)) {
                Some(v) => v > limit,
                None => self.digits != 0,
            }
        } else {
            match pow10(self.scale).and_then(|p| limit.checked_mul(p)) {
                Some(v) => self.digits > v,
                None => false,
            }
        }
    }

    /// `self < limit` for a whole number `limit`.
    fn below(self, limit: u128) -> bool {
        !self.exceeds(limit) && !self.equals(limit)
    }

    fn equals(self, whole: u128) -> bool {
        self.whole() == Some(whole)
    }

    /// The value as a whole number, when it is one (and fits).
    fn whole(self) -> Option<u128> {
        if self.scale <= 0 {
            self.digits.checked_mul(pow10(-self.scale)?)
        } else {
            let p = pow10(self.scale)?;
            self.digits.is_multiple_of(p).then_some(self.digits / p)
        }
    }
}

fn render(parts: &Parts<'_>, base: u32, exponent: i64, mut format: Format) -> Option<String> {
    let mut digits: u128 = 0;
    for b in parts.num.bytes().chain(parts.denom.bytes()) {
        digits = digits.checked_mul(10)?.checked_add(u128::from(b - b'0'))?;
    }
    let mut value = Decimal {
        digits,
        scale: i64::try_from(parts.denom.len()).ok()?,
    };
    if base == 10 {
        value.scale -= exponent;
    } else {
        value.digits = value
            .digits
            .checked_mul(1u128.checked_shl(u32::try_from(exponent).ok()?)?)?;
    }
    // Anything finer than a nano unit rounds up (away from zero) to the next nano unit.
    if value.digits != 0 && value.scale > NANO_SCALE {
        let drop = value.scale - NANO_SCALE;
        value.digits = match pow10(drop) {
            Some(p) if drop <= MAX_POW10 => {
                value.digits / p + u128::from(!value.digits.is_multiple_of(p))
            }
            _ => 1,
        };
        value.scale = NANO_SCALE;
    }
    if value.digits == 0 {
        return Some("0".to_owned());
    }
    let max_int64 = u128::from(u64::MAX >> 1);
    if format == Format::BinarySi && value.exceeds(max_int64) {
        value = Decimal {
            digits: max_int64,
            scale: 0,
        };
    }
    if format == Format::BinarySi && value.below(1) {
        format = Format::DecimalSi;
    }
    if format == Format::BinarySi && (value.below(1024) || value.whole().is_none()) {
        format = Format::DecimalSi;
    }
    let sign = if parts.negative { "-" } else { "" };
    match format {
        Format::BinarySi => {
            let mut mantissa = value.whole()?;
            let mut times = 0usize;
            while mantissa >= 1024 && mantissa.is_multiple_of(1024) {
                mantissa /= 1024;
                times += 1;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"].get(times)?;
            Some(format!("{sign}{mantissa}{suffix}"))
        }
        Format::DecimalSi | Format::DecimalExponent => {
            let mut mantissa = value.digits;
            let mut exp = -value.scale;
            while mantissa >= 10 && mantissa.is_multiple_of(10) {
                mantissa /= 10;
                exp += 1;
            }
            while exp % 3 != 0 {
                mantissa = mantissa.checked_mul(10)?;
                exp -= 1;
            }
            let suffix = match format {
                Format::DecimalExponent if exp == 0 => String::new(),
                Format::DecimalExponent => format!("e{exp}"),
                _ => decimal_suffix(exp).to_owned(),
            };
            Some(format!("{sign}{mantissa}{suffix}"))
        }
    }
}

/// The SI suffix for a power of ten; Kubernetes writes no suffix for powers it has none for.
fn decimal_suffix(exponent: i64) -> &'static str {
    match exponent {
        -9 => "n",
        -6 => "u",
        -3 => "m",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        18 => "E",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn c(text: &str) -> String {
        canonical(text)
    }

    #[test]
    fn canonical_text_is_kept() {
        for text in [
            "1Gi", "5Ki", "3Ti", "100m", "1500m", "250m", "10k", "2", "7", "123", "1e3",
        ] {
            assert_eq!(c(text), text, "{text}");
        }
        // Kept verbatim even with a sign or leading zeros, as Kubernetes does.
        assert_eq!(c("+5"), "+5");
        assert_eq!(c("007"), "007");
        assert_eq!(c(" 2Gi "), "2Gi");
    }

    #[test]
    fn decimal_values_get_the_largest_exact_suffix() {
        assert_eq!(c("1000m"), "1");
        assert_eq!(c("1000"), "1k");
        assert_eq!(c("0.5"), "500m");
        assert_eq!(c("1.5k"), "1500");
        assert_eq!(c("1.5"), "1500m");
        assert_eq!(c("2000000"), "2M");
        assert_eq!(c("0.1"), "100m");
        assert_eq!(c("100000u"), "100m");
        assert_eq!(c("12e2"), "1200");
        assert_eq!(c("1E6"), "1E6");
        assert_eq!(c("10e5"), "1e6");
        assert_eq!(c("-1000m"), "-1");
    }

    #[test]
    fn binary_values_get_the_largest_exact_suffix() {
        assert_eq!(c("1024Mi"), "1Gi");
        assert_eq!(c("2048Ki"), "2Mi");
        assert_eq!(c("1536Mi"), "1536Mi");
        assert_eq!(c("1.5Gi"), "1536Mi");
        assert_eq!(c("1Pi"), "1Pi");
        assert_eq!(c("1024Pi"), "1Ei");
        // Below 1024, or not whole: decimal.
        assert_eq!(c("0.5Ki"), "512");
        assert_eq!(c("0.1Ki"), "102400m");
        assert_eq!(c("1.5Ki"), "1536");
    }

    #[test]
    fn finer_than_nano_rounds_up() {
        assert_eq!(c("0.0000000001"), "1n");
        assert_eq!(c("1.0000000001"), "1000000001n");
        assert_eq!(c("1n"), "1n");
    }

    #[test]
    fn zero_in_any_form_is_zero() {
        for text in ["0", "0Gi", "0.000", "-0", "00", "0m", "0e3"] {
            assert_eq!(c(text), "0", "{text}");
        }
    }

    #[test]
    fn binary_values_are_capped_at_the_int64_maximum() {
        assert_eq!(c("9999999Ei"), "9223372036854775807");
    }

    #[test]
    fn unparsable_text_is_shown_as_is() {
        for text in ["1Kb", "abc", "1K", "1e", "", "1..2", "1e99999"] {
            assert_eq!(c(text), text.trim(), "{text}");
        }
    }

    #[test]
    fn json_values() {
        assert_eq!(quantity(None), "0");
        assert_eq!(quantity(Some(&json!("1024Mi"))), "1Gi");
        assert_eq!(quantity(Some(&json!(5))), "5");
        assert_eq!(quantity(Some(&json!(true))), "0");
    }
}
