//! Resource quantities (`100m`, `1Gi`, `1.5`, `2e3`) as Kubernetes' `resource.Quantity`:
//! parsing with its exact error messages, exact comparison and arithmetic, rounding, Go's
//! integer views (`Value`, `MilliValue`), the canonical string form
//! (`1.5` → `1500m`, `1024Mi` → `1Gi`), and the text Go writes back for a quantity it
//! decoded ([`marshal`]: the canonical form, or the text itself when Go's parser kept it).
//! The one implementation: validation, defaulting, the printers, quota, the scheduler and
//! the controllers all read quantities here.
//!
//! A value is `mantissa × 10^exponent` with a `u128` mantissa and a sign, which is exact for
//! every quantity Kubernetes itself can hold (it caps binary values at 2^63-1 and rounds
//! everything up to nano precision).

use std::cmp::Ordering;

use serde_json::Value;

/// The suffix family a quantity was written in; it is kept when re-serialising.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `12e6`
    DecimalExponent,
    /// `12Mi`
    BinarySI,
    /// `12M`, `500m`, `3`
    DecimalSI,
}

/// A parsed quantity.
#[derive(Clone, Debug)]
pub struct Quantity {
    negative: bool,
    mantissa: u128,
    exponent: i32,
    format: Format,
}

/// Kubernetes' `ErrFormatWrong` message.
pub const ERR_FORMAT_WRONG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
/// Kubernetes' `ErrNumeric` message.
pub const ERR_NUMERIC: &str = "unable to parse numeric part of quantity";
/// Kubernetes' `ErrSuffix` message.
pub const ERR_SUFFIX: &str = "unable to parse quantity's suffix";

const SUFFIX_CHARS: &[u8] = b"eEinumkKMGTP";

struct Scanned<'a> {
    positive: bool,
    num: &'a str,
    denom: &'a str,
    suffix: &'a str,
}

/// Splits a quantity string into sign, integer digits, fraction digits and suffix, the way
/// Kubernetes' scanner does (leading zeros dropped, `1.` and `.5` accepted).
fn scan(s: &str) -> Result<Scanned<'_>, &'static str> {
    let b = s.as_bytes();
    let end = b.len();
    let mut pos = 0;
    let mut positive = true;
    match b.first() {
        Some(b'-') => {
            positive = false;
            pos = 1;
        }
        Some(b'+') => pos = 1,
        _ => {}
    }
    while pos < end && b.get(pos) == Some(&b'0') {
        pos += 1;
    }
    if pos >= end {
        return Ok(Scanned {
            positive,
            num: "0",
            denom: "",
            suffix: "",
        });
    }
    let num_start = pos;
    while pos < end && b.get(pos).is_some_and(u8::is_ascii_digit) {
        pos += 1;
    }
    let mut num = s.get(num_start..pos).unwrap_or("0");
    if num.is_empty() {
        num = "0";
    }
    let mut denom = "";
    if b.get(pos) == Some(&b'.') {
        pos += 1;
        let d_start = pos;
        while pos < end && b.get(pos).is_some_and(u8::is_ascii_digit) {
            pos += 1;
        }
        denom = s.get(d_start..pos).unwrap_or("");
    }
    let suffix_start = pos;
    while pos < end && b.get(pos).is_some_and(|c| SUFFIX_CHARS.contains(c)) {
        pos += 1;
    }
    if matches!(b.get(pos), Some(b'-') | Some(b'+')) {
        pos += 1;
    }
    while pos < end && b.get(pos).is_some_and(u8::is_ascii_digit) {
        pos += 1;
    }
    if pos < end {
        return Err(ERR_FORMAT_WRONG);
    }
    Ok(Scanned {
        positive,
        num,
        denom,
        suffix: s.get(suffix_start..).unwrap_or(""),
    })
}

/// The base (10 or 2), exponent and format a suffix stands for.
fn interpret_suffix(suffix: &str) -> Option<(u32, i32, Format)> {
    let decimal = |e| Some((10, e, Format::DecimalSI));
    let binary = |e| Some((2, e, Format::BinarySI));
    match suffix {
        "" => decimal(0),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
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
        s if s.len() > 1 && (s.starts_with('e') || s.starts_with('E')) => {
            let e: i64 = s.get(1..)?.parse().ok()?;
            let e = i32::try_from(e).ok()?;
            Some((10, e, Format::DecimalExponent))
        }
        _ => None,
    }
}

fn pow10(n: u32) -> Option<u128> {
    10u128.checked_pow(n)
}

/// Divides rounding away from zero.
fn div_ceil(m: u128, d: u128) -> u128 {
    if d == 0 {
        return m;
    }
    m / d + u128::from(!m.is_multiple_of(d))
}

/// Removes trailing decimal zeros from the mantissa.
fn normalize(mut m: u128, mut e: i32) -> (u128, i32) {
    if m == 0 {
        return (0, 0);
    }
    while m.is_multiple_of(10) {
        m /= 10;
        e = e.saturating_add(1);
    }
    (m, e)
}

fn digit_count(m: u128) -> i64 {
    m.checked_ilog10().map_or(1, |l| i64::from(l) + 1)
}

/// Compares two non-negative values `m × 10^e`.
fn magnitude_cmp(a: (u128, i32), b: (u128, i32)) -> Ordering {
    let (am, ae) = normalize(a.0, a.1);
    let (bm, be) = normalize(b.0, b.1);
    match (am == 0, bm == 0) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Less,
        (false, true) => return Ordering::Greater,
        _ => {}
    }
    let oa = digit_count(am) + i64::from(ae);
    let ob = digit_count(bm) + i64::from(be);
    if oa != ob {
        return oa.cmp(&ob);
    }
    let mut sa = am.to_string();
    let mut sb = bm.to_string();
    let len = sa.len().max(sb.len());
    while sa.len() < len {
        sa.push('0');
    }
    while sb.len() < len {
        sb.push('0');
    }
    sa.cmp(&sb)
}

impl Quantity {
    /// Parses a quantity string; the error is Kubernetes' message.
    pub fn parse(s: &str) -> Result<Quantity, &'static str> {
        if s.is_empty() {
            return Err(ERR_FORMAT_WRONG);
        }
        let sc = scan(s)?;
        let (base, exp, mut format) = interpret_suffix(sc.suffix).ok_or(ERR_SUFFIX)?;
        let mut digits = format!("{}{}", sc.num, sc.denom);
        let mut exponent: i64 = -(sc.denom.len() as i64);
        // Keep the mantissa within u128: drop excess low digits, rounding up.
        let mut dropped_nonzero = false;
        while digits.len() > 36 {
            if digits.pop().is_some_and(|c| c != '0') {
                dropped_nonzero = true;
            }
            exponent += 1;
        }
        let mut mantissa: u128 = digits.parse().map_err(|_| ERR_NUMERIC)?;
        if dropped_nonzero {
            mantissa += 1;
        }
        if base == 10 {
            exponent += i64::from(exp);
        } else {
            // Multiply by 2^exp; when that overflows, trade decimal digits for room.
            let factor = 1u128 << exp.clamp(0, 60);
            while mantissa.checked_mul(factor).is_none() {
                mantissa = div_ceil(mantissa, 10);
                exponent += 1;
            }
            mantissa *= factor;
        }
        let mut exponent =
            i32::try_from(exponent.clamp(i64::from(i32::MIN / 2), i64::from(i32::MAX / 2)))
                .unwrap_or_default();
        // Round up to nano precision.
        if mantissa != 0 && exponent < -9 {
            let shift = u32::try_from(-9 - exponent).unwrap_or(u32::MAX);
            mantissa = match pow10(shift) {
                Some(d) => div_ceil(mantissa, d),
                None => 1,
            };
            exponent = -9;
        }
        let negative = !sc.positive && mantissa != 0;
        if format == Format::BinarySI {
            let max = (i64::MAX as u128, 0);
            if magnitude_cmp((mantissa, exponent), max) == Ordering::Greater {
                mantissa = i64::MAX as u128;
                exponent = 0;
            }
            if mantissa != 0 && magnitude_cmp((mantissa, exponent), (1, 0)) == Ordering::Less {
                format = Format::DecimalSI;
            }
        }
        Ok(Quantity {
            negative,
            mantissa,
            exponent,
            format,
        })
    }

    /// Parses a quantity given as JSON: a string, or a number as clients sometimes send.
    pub fn from_json(v: &Value) -> Result<Quantity, &'static str> {
        match v {
            Value::String(s) => Quantity::parse(s.trim()),
            Value::Number(n) => Quantity::parse(&n.to_string()),
            _ => Err(ERR_FORMAT_WRONG),
        }
    }

    /// A whole number in the decimal SI format.
    pub fn from_int(v: i64) -> Quantity {
        Quantity {
            negative: v < 0,
            mantissa: u128::from(v.unsigned_abs()),
            exponent: 0,
            format: Format::DecimalSI,
        }
    }

    /// Go's `NewMilliQuantity(v, DecimalSI)`: `v` thousandths.
    pub fn from_milli(v: i64) -> Quantity {
        Quantity {
            exponent: -3,
            ..Quantity::from_int(v)
        }
    }

    /// The format the quantity will be written in.
    pub fn format(&self) -> Format {
        self.format
    }

    pub fn is_zero(&self) -> bool {
        self.mantissa == 0
    }

    /// -1, 0 or 1.
    pub fn sign(&self) -> i32 {
        if self.mantissa == 0 {
            0
        } else if self.negative {
            -1
        } else {
            1
        }
    }

    /// Exact comparison.
    pub fn cmp_q(&self, other: &Quantity) -> Ordering {
        match (self.sign(), other.sign()) {
            (a, b) if a != b => a.cmp(&b),
            (0, _) => Ordering::Equal,
            (1, _) => magnitude_cmp(
                (self.mantissa, self.exponent),
                (other.mantissa, other.exponent),
            ),
            _ => magnitude_cmp(
                (other.mantissa, other.exponent),
                (self.mantissa, self.exponent),
            ),
        }
    }

    /// The exact sum (saturating for absurd magnitudes). A zero left operand takes the
    /// format of the right one, as Kubernetes does.
    pub fn add(&self, other: &Quantity) -> Quantity {
        let format = if self.is_zero() {
            other.format
        } else {
            self.format
        };
        if other.is_zero() {
            return Quantity {
                format,
                ..self.clone()
            };
        }
        if self.is_zero() {
            return Quantity {
                format,
                ..other.clone()
            };
        }
        let e = self.exponent.min(other.exponent);
        let scale = |m: u128, me: i32| -> u128 {
            let shift = u32::try_from(me - e).unwrap_or(u32::MAX);
            pow10(shift)
                .and_then(|p| m.checked_mul(p))
                .unwrap_or(u128::MAX)
        };
        let a = scale(self.mantissa, self.exponent);
        let b = scale(other.mantissa, other.exponent);
        let (negative, mantissa) = if self.negative == other.negative {
            (self.negative, a.saturating_add(b))
        } else if a >= b {
            (self.negative, a - b)
        } else {
            (other.negative, b - a)
        };
        let (mantissa, exponent) = normalize(mantissa, e);
        Quantity {
            negative: negative && mantissa != 0,
            mantissa,
            exponent,
            format,
        }
    }

    /// Rounds up (away from zero) to `10^scale` precision; returns whether it was exact.
    pub fn round_up(&mut self, scale: i32) -> bool {
        if self.mantissa == 0 || self.exponent >= scale {
            return true;
        }
        let shift = u32::try_from(scale - self.exponent).unwrap_or(u32::MAX);
        let (m, exact) = match pow10(shift) {
            Some(d) => (div_ceil(self.mantissa, d), self.mantissa.is_multiple_of(d)),
            None => (1, false),
        };
        self.mantissa = m;
        self.exponent = scale;
        exact
    }

    /// Whether the value is a whole number.
    pub fn is_integer(&self) -> bool {
        normalize(self.mantissa, self.exponent).1 >= 0
    }

    /// The value rounded up (away from zero) to a whole number, saturating.
    pub fn ceil_value(&self) -> i128 {
        let (m, e) = normalize(self.mantissa, self.exponent);
        let magnitude: u128 = if e >= 0 {
            pow10(u32::try_from(e).unwrap_or(u32::MAX))
                .and_then(|p| m.checked_mul(p))
                .unwrap_or(u128::MAX)
        } else {
            match pow10(u32::try_from(-e).unwrap_or(u32::MAX)) {
                Some(d) => div_ceil(m, d),
                None => 1,
            }
        };
        let v = i128::try_from(magnitude).unwrap_or(i128::MAX);
        if self.negative { -v } else { v }
    }

    /// The value × 1000 rounded up, saturating.
    pub fn milli_value(&self) -> i128 {
        self.scaled_value(3)
    }

    /// The value × 10^`scale` rounded up (away from zero), saturating: `scaled_value(9)` is
    /// the value in nano-units.
    pub fn scaled_value(&self, scale: i32) -> i128 {
        let mut q = self.clone();
        q.exponent = q.exponent.saturating_add(scale);
        q.ceil_value()
    }

    /// Go's `Value()`: rounded up away from zero to a whole number, saturating at the
    /// `i64` range.
    pub fn value(&self) -> i64 {
        saturate(self.ceil_value())
    }

    /// Go's `MilliValue()`: the value × 1000 rounded up, saturating at the `i64` range.
    pub fn milli_value_i64(&self) -> i64 {
        saturate(self.milli_value())
    }

    /// `-self`, keeping the format.
    pub fn neg(&self) -> Quantity {
        Quantity {
            negative: !self.negative && self.mantissa != 0,
            ..self.clone()
        }
    }

    /// `self - other` (Go's `Sub`: a zero `self` takes `other`'s format).
    pub fn sub(&self, other: &Quantity) -> Quantity {
        self.add(&other.neg())
    }

    /// An approximation as a float.
    pub fn as_f64(&self) -> f64 {
        let v = self.mantissa as f64 * 10f64.powi(self.exponent);
        if self.negative { -v } else { v }
    }

    /// The canonical string form, as the API server writes it.
    pub fn canonical(&self) -> String {
        if self.mantissa == 0 {
            return "0".to_string();
        }
        let (m, e) = normalize(self.mantissa, self.exponent);
        let sign = if self.negative { "-" } else { "" };
        let mut format = self.format;
        if format == Format::BinarySI {
            let small = magnitude_cmp((m, e), (1024, 0)) == Ordering::Less;
            if small || e < 0 {
                format = Format::DecimalSI;
            }
        }
        if format == Format::BinarySI {
            let value = u32::try_from(e)
                .ok()
                .and_then(pow10)
                .and_then(|p| m.checked_mul(p));
            if let Some(mut v) = value {
                let mut k = 0usize;
                while k < 6 && v % 1024 == 0 {
                    v /= 1024;
                    k += 1;
                }
                let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
                    .get(k)
                    .copied()
                    .unwrap_or("");
                return format!("{sign}{v}{suffix}");
            }
            format = Format::DecimalSI;
        }
        let r = e.rem_euclid(3);
        let mut digits = m.to_string();
        for _ in 0..r {
            digits.push('0');
        }
        let e = e - r;
        let suffix = match (format, e) {
            (_, 0) => String::new(),
            (Format::DecimalSI, -9) => "n".to_string(),
            (Format::DecimalSI, -6) => "u".to_string(),
            (Format::DecimalSI, -3) => "m".to_string(),
            (Format::DecimalSI, 3) => "k".to_string(),
            (Format::DecimalSI, 6) => "M".to_string(),
            (Format::DecimalSI, 9) => "G".to_string(),
            (Format::DecimalSI, 12) => "T".to_string(),
            (Format::DecimalSI, 15) => "P".to_string(),
            (Format::DecimalSI, 18) => "E".to_string(),
            (_, e) => format!("e{e}"),
        };
        format!("{sign}{digits}{suffix}")
    }
}

fn saturate(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

/// Go's `resource.MaxMilliValue`: the largest value whose milli form fits an `i64`.
pub const MAX_MILLI_VALUE: i64 = i64::MAX / 1000;

/// `text` × 10^`scale`, rounded up and saturating (`scale` 3: thousandths, 9:
/// nano-units); `None` when it does not parse or has no number before its suffix (`"Gi"`).
pub fn parse_scaled(text: &str, scale: i32) -> Option<i128> {
    let text = text.trim();
    let unsigned = text.trim_start_matches(['+', '-']);
    if !unsigned.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return None;
    }
    Some(Quantity::parse(text).ok()?.scaled_value(scale))
}

/// The text Kubernetes writes back for a quantity it decoded from `text` (Go's
/// `MarshalJSON` after `UnmarshalJSON`): `text` itself when Go's parser keeps it — a
/// value exact in 64 bits whose digits already look canonical (`"1Gi"`, `"100m"`, even
/// `"+5"` or `"007"`) — otherwise the [`Quantity::canonical`] form (`"1000m"` → `"1"`).
/// Surrounding whitespace is ignored, as Go's decoder does.
pub fn marshal(text: &str) -> Result<String, &'static str> {
    let text = text.trim();
    let q = Quantity::parse(text)?;
    if text == "0" || keeps_text(text) {
        return Ok(text.to_owned());
    }
    Ok(q.canonical())
}

/// Whether Go's `ParseQuantity` caches the text it parsed (its fast path: the value and
/// scale fit an `int64` and the digits are already in canonical shape).
fn keeps_text(text: &str) -> bool {
    let Ok(parts) = scan(text) else {
        return false;
    };
    let Some((base, exponent, format)) = interpret_suffix(parts.suffix) else {
        return false;
    };
    let exponent = i64::from(exponent);
    let num_len = i64::try_from(parts.num.len()).unwrap_or(i64::MAX);
    let denom_len = i64::try_from(parts.denom.len()).unwrap_or(i64::MAX);
    let (mut scale, precision, multiplier) = match format {
        Format::DecimalSI | Format::DecimalExponent => (
            exponent,
            18i64.saturating_sub(num_len.saturating_add(denom_len)),
            1i64,
        ),
        Format::BinarySI => {
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
    let digits = || parts.num.bytes().chain(parts.denom.bytes());
    let mut value: i64 = 0;
    for b in digits() {
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
        Format::BinarySI => exponent % 10 == 0 && value & 7 != 0,
        _ => {
            let ends_in_000 = digits().rev().take(3).filter(|b| *b == b'0').count() == 3;
            scale % 3 == 0 && !ends_in_000 && digits().next() != Some(b'0')
        }
    }
}

/// Rewrites a quantity field as the API server stores it: Go's decode, defaulting and
/// encode — rounded up to milli precision when `milli` (resource lists are, by
/// `SetDefaults_ResourceList`), then written as [`marshal`] writes it (the text itself when
/// Go keeps it and rounding did not change it, else the canonical form). Unparseable values
/// are left alone for validation to report.
pub fn canonicalize_value(v: &mut Value, milli: bool) {
    let text = match v {
        Value::String(s) => s.trim().to_owned(),
        Value::Number(n) => n.to_string(),
        _ => return,
    };
    let Ok(mut q) = Quantity::parse(&text) else {
        return;
    };
    // Go's `RoundUp` drops the kept text only when it changes the scale.
    let rounds = milli && q.mantissa != 0 && q.exponent < -3;
    if !rounds && (text == "0" || keeps_text(&text)) {
        *v = Value::String(text);
        return;
    }
    if milli {
        q.round_up(-3);
    }
    *v = Value::String(q.canonical());
}

/// Canonicalizes every value of a resource list (`requests`, `limits`, `capacity`, ...).
pub fn canonicalize_list(v: Option<&mut Value>) {
    if let Some(Value::Object(m)) = v {
        for q in m.values_mut() {
            canonicalize_value(q, true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn canonical_forms() {
        for (input, want) in [
            ("0", "0"),
            ("1", "1"),
            ("100m", "100m"),
            ("1000m", "1"),
            ("0.5", "500m"),
            ("1.5", "1500m"),
            (".5", "500m"),
            ("1.", "1"),
            ("1500", "1500"),
            ("1000", "1k"),
            ("1k", "1k"),
            ("1Gi", "1Gi"),
            ("1024Mi", "1Gi"),
            ("1.5Gi", "1536Mi"),
            ("8Gi", "8Gi"),
            ("512", "512"),
            ("0.5Ki", "512"),
            ("1e3", "1e3"),
            ("1E3", "1e3"),
            ("1500e-3", "1500e-3"),
            ("12e6", "12e6"),
            ("-1", "-1"),
            ("-100m", "-100m"),
            ("0.0000000001", "1n"),
            ("0.1m", "100u"),
            ("1M", "1M"),
            ("1000000", "1M"),
            ("00100", "100"),
            ("+5", "5"),
        ] {
            assert_eq!(q(input).canonical(), want, "{input}");
        }
    }

    #[test]
    fn parse_errors() {
        assert_eq!(Quantity::parse("").err(), Some(ERR_FORMAT_WRONG));
        assert_eq!(Quantity::parse("abc").err(), Some(ERR_FORMAT_WRONG));
        assert_eq!(Quantity::parse("1.2.3").err(), Some(ERR_FORMAT_WRONG));
        assert_eq!(Quantity::parse("1x").err(), Some(ERR_FORMAT_WRONG));
        assert_eq!(Quantity::parse("1Ki1").err(), Some(ERR_SUFFIX));
        assert_eq!(Quantity::parse("1kk").err(), Some(ERR_SUFFIX));
        assert_eq!(Quantity::parse("1e").err(), Some(ERR_SUFFIX));
        assert!(Quantity::parse(&"9".repeat(200)).is_ok());
        assert!(Quantity::parse("1e999999999999").is_err());
    }

    #[test]
    fn comparisons() {
        assert_eq!(q("1").cmp_q(&q("1000m")), Ordering::Equal);
        assert_eq!(q("1Gi").cmp_q(&q("1G")), Ordering::Greater);
        assert_eq!(q("500m").cmp_q(&q("0.5")), Ordering::Equal);
        assert_eq!(q("-1").cmp_q(&q("0")), Ordering::Less);
        assert_eq!(q("-2").cmp_q(&q("-1")), Ordering::Less);
        assert_eq!(q("2").cmp_q(&q("10")), Ordering::Less);
        assert_eq!(q("1e3").cmp_q(&q("1k")), Ordering::Equal);
    }

    #[test]
    fn arithmetic_and_rounding() {
        assert_eq!(q("100m").add(&q("1")).canonical(), "1100m");
        assert_eq!(q("1Gi").add(&q("1Gi")).canonical(), "2Gi");
        assert_eq!(q("0").add(&q("1Ki")).format(), Format::BinarySI);
        assert_eq!(q("1").add(&q("-3")).canonical(), "-2");
        let mut x = q("0.0001");
        assert!(!x.round_up(-3));
        assert_eq!(x.canonical(), "1m");
        assert!(q("2").is_integer());
        assert!(!q("1500m").is_integer());
        assert_eq!(q("1500m").ceil_value(), 2);
        assert_eq!(q("1.5").milli_value(), 1500);
        assert_eq!(q("2Mi").ceil_value(), 2 * 1024 * 1024);
    }

    #[test]
    fn go_integer_views_and_subtraction() {
        assert_eq!(q("1500m").value(), 2);
        assert_eq!(q("1.5").milli_value_i64(), 1500);
        assert_eq!(q("1e30").value(), i64::MAX);
        assert_eq!(q("-1e30").milli_value_i64(), i64::MIN);
        assert_eq!(q("500m").neg().canonical(), "-500m");
        assert_eq!(q("-2Gi").neg().canonical(), "2Gi");
        assert_eq!(q("1").sub(&q("250m")).canonical(), "750m");
        assert_eq!(q("1Gi").sub(&q("2Gi")).canonical(), "-1Gi");
        assert_eq!(q("0").sub(&q("1Ki")).canonical(), "-1Ki");
        assert_eq!(parse_scaled("1.5Gi", 0), Some(1_610_612_736));
        assert_eq!(parse_scaled("100m", 9), Some(100_000_000));
        assert_eq!(parse_scaled("Gi", 0), None);
        assert_eq!(parse_scaled("x", 0), None);
        for (milli, text) in [
            (250, "250m"),
            (1000, "1"),
            (1500, "1500m"),
            (2_000_000, "2k"),
        ] {
            assert_eq!(Quantity::from_milli(milli).canonical(), text);
        }
        assert_eq!(Quantity::from_milli(0).canonical(), "0");
        assert_eq!(Quantity::from_milli(-250).canonical(), "-250m");
    }

    #[test]
    fn marshal_keeps_the_text_go_keeps() {
        // The printers used to keep canonical-looking text and validation to always
        // rewrite it; Go keeps it, and `marshal` is Go's answer.
        for text in [
            "1Gi", "5Ki", "3Ti", "100m", "1500m", "250m", "10k", "2", "7", "123", "1e3", "+5",
            "007", "1E6",
        ] {
            assert_eq!(marshal(text).as_deref(), Ok(text), "{text}");
        }
        assert_eq!(marshal(" 2Gi ").as_deref(), Ok("2Gi"));
        for (text, want) in [
            ("1000m", "1"),
            ("1000", "1k"),
            ("0.5", "500m"),
            ("1.5k", "1500"),
            ("10e5", "1e6"),
            ("-1000m", "-1"),
            ("1024Mi", "1Gi"),
            ("1.5Gi", "1536Mi"),
            ("0.5Ki", "512"),
            ("0.1Ki", "102400m"),
            ("1.5Ki", "1536"),
            ("1024Pi", "1Ei"),
            ("0.0000000001", "1n"),
            ("1.0000000001", "1000000001n"),
            ("9999999Ei", "9223372036854775807"),
            ("-0", "0"),
            ("0Gi", "0"),
            ("0e3", "0"),
        ] {
            assert_eq!(marshal(text).as_deref(), Ok(want), "{text}");
        }
        for text in ["1Kb", "abc", "1K", "1e", "", "1..2"] {
            assert!(marshal(text).is_err(), "{text}");
        }
    }

    #[test]
    fn stored_text_is_what_go_writes_back() {
        let stored = |v: Value, milli: bool| {
            let mut v = v;
            canonicalize_value(&mut v, milli);
            v
        };
        use serde_json::json;
        assert_eq!(stored(json!("+5"), true), json!("+5"));
        assert_eq!(stored(json!("1Gi"), true), json!("1Gi"));
        assert_eq!(stored(json!("1000m"), true), json!("1"));
        assert_eq!(stored(json!("1.5"), false), json!("1500m"));
        assert_eq!(stored(json!("0.0001"), true), json!("1m"));
        assert_eq!(stored(json!("0.0001"), false), json!("100u"));
        assert_eq!(stored(json!("2.5m"), true), json!("3m"));
        assert_eq!(stored(json!(5), true), json!("5"));
        assert_eq!(stored(json!(" 2Gi "), true), json!("2Gi"));
        assert_eq!(stored(json!("abc"), true), json!("abc"));
        assert_eq!(stored(json!(true), true), json!(true));
    }

    #[test]
    fn binary_cap() {
        assert_eq!(q("16Ei").canonical(), "9223372036854775807");
    }
}
