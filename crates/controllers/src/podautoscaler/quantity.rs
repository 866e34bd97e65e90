//! Resource quantities as the HPA computes with them: parsed to thousandths of a unit
//! (rounded up, as Kubernetes' `MilliValue`), and written back in canonical decimal form
//! (`250m`, `1`, `2k`) as `resource.NewMilliQuantity(v, DecimalSI)` prints them.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// A quantity in thousandths of its unit (`"250m"` → 250, `"1Ki"` → 1_024_000), rounded
/// up; `None` when it does not parse or does not fit.
pub fn parse_milli(text: &str) -> Option<i64> {
    i64::try_from(kyb_apimachinery::quantity::parse_scaled(text, 3)?).ok()
}

/// The thousandths in a quantity (0 when it does not parse).
pub fn milli(quantity: &Quantity) -> i64 {
    parse_milli(&quantity.0).unwrap_or(0)
}

/// `milli` thousandths in canonical decimal form.
pub fn from_milli(milli: i64) -> Quantity {
    Quantity(kyb_apimachinery::quantity::Quantity::from_milli(milli).canonical())
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
