//! Resource quantities as the HPA computes with them: parsed to thousandths of a unit
//! (rounded up, as Kubernetes' `MilliValue`), and written back in canonical decimal form
//! (`250m`, `1`, `2k`) as `resource.NewMilliQuantity(v, DecimalSI)` prints them.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// A quantity in thousandths of its unit (`"250m"` → 250, `"1Ki"` → 1_024_000), rounded
/// up; `None` when it does not parse.
pub fn parse_milli(text: &str) -> Option<i64> {
    let text = text.trim();
    let (sign, text) = match text.strip_prefix('-') {
        Some(rest) => (-1i128, rest),
        None => (1i128, text.strip_prefix('+').unwrap_or(text)),
    };
    let number_end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(number_end);
    if number.is_empty() || number == "." {
        return None;
    }
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if fraction.contains('.') || fraction.len() > 18 || whole.len() > 20 {
        return None;
    }
    let digits: i128 = format!("{whole}{fraction}").parse().ok()?;
    // value = digits / 10^fraction_len × 10^decimal_exponent × 2^binary_exponent
    let (decimal_exponent, binary_exponent): (i32, u32) = match suffix {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        other => {
            let exponent = other.strip_prefix(['e', 'E'])?;
            (exponent.parse().ok()?, 0)
        }
    };
    // Thousandths: one more factor of 10^3.
    let exponent = decimal_exponent + 3 - i32::try_from(fraction.len()).ok()?;
    let mut numerator = digits.checked_mul(1i128.checked_shl(binary_exponent)?)?;
    let mut denominator = 1i128;
    if exponent >= 0 {
        numerator = numerator.checked_mul(10i128.checked_pow(exponent.unsigned_abs())?)?;
    } else {
        denominator = 10i128.checked_pow(exponent.unsigned_abs())?;
    }
    let milli = if sign > 0 {
        (numerator + denominator - 1) / denominator
    } else {
        -(numerator / denominator)
    };
    i64::try_from(milli).ok()
}

/// The thousandths in a quantity (0 when it does not parse).
pub fn milli(quantity: &Quantity) -> i64 {
    parse_milli(&quantity.0).unwrap_or(0)
}

/// `milli` thousandths in canonical decimal form.
pub fn from_milli(milli: i64) -> Quantity {
    if milli % 1000 != 0 {
        return Quantity(format!("{milli}m"));
    }
    let mut value = milli / 1000;
    let mut suffix = "";
    for next in ["k", "M", "G", "T", "P", "E"] {
        if value == 0 || value % 1000 != 0 {
            break;
        }
        value /= 1000;
        suffix = next;
    }
    Quantity(format!("{value}{suffix}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_to_thousandths() {
        assert_eq!(parse_milli("250m"), Some(250));
        assert_eq!(parse_milli("1"), Some(1000));
        assert_eq!(parse_milli("0.5"), Some(500));
        assert_eq!(parse_milli("1Ki"), Some(1_024_000));
        assert_eq!(parse_milli("128Mi"), Some(134_217_728_000));
        assert_eq!(parse_milli("1k"), Some(1_000_000));
        assert_eq!(parse_milli("100n"), Some(1));
        assert_eq!(parse_milli("1e3"), Some(1_000_000));
        assert_eq!(parse_milli("1x"), None);
        assert_eq!(parse_milli(""), None);
    }

    #[test]
    fn prints_canonically() {
        assert_eq!(from_milli(250).0, "250m");
        assert_eq!(from_milli(1000).0, "1");
        assert_eq!(from_milli(1500).0, "1500m");
        assert_eq!(from_milli(2_000_000).0, "2k");
        assert_eq!(from_milli(104_857_600_000).0, "104857600");
        assert_eq!(from_milli(0).0, "0");
    }
}
