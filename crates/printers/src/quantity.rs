//! Resource quantities (`"500m"`, `"1Gi"`, `"1e3"`) written the way Kubernetes writes them
//! back out: `kyb_apimachinery::quantity::marshal`, Go's text for a decoded quantity (the
//! canonical form, or the text itself when already canonical). A missing quantity is
//! zero, `"0"`; text that does not parse is shown as it is.

use kyb_apimachinery::quantity::marshal;
use serde_json::Value;

/// The canonical text of the quantity in `value`; a missing quantity is zero, `"0"`.
pub(crate) fn quantity(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(text)) => canonical(text),
        Some(Value::Number(number)) => canonical(&number.to_string()),
        _ => "0".to_owned(),
    }
}

/// The canonical text of a quantity string, or the (trimmed) text when it does not parse.
pub(crate) fn canonical(text: &str) -> String {
    marshal(text).unwrap_or_else(|_| text.trim().to_owned())
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
