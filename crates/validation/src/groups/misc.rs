//! Kinds that are only ever request bodies of subresources: `TokenRequest`
//! (`serviceaccounts/token`).

use serde_json::Value;

use crate::Ctx;
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json;
use kyb_apimachinery::json::{Obj, field};

/// `ValidateTokenRequest`: between 10 minutes and 2^32 seconds (an unset duration means the
/// one hour default).
pub(crate) fn validate_token_request(tr: &Value, _ctx: &Ctx<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let p = Path::new("spec").child("expirationSeconds");
    let exp = field(tr, "spec")
        .get_field("expirationSeconds")
        .and_then(json::as_int)
        .unwrap_or(3600);
    if exp < 600 {
        errs.push(FieldError::invalid(
            &p,
            exp,
            "may not specify a duration less than 10 minutes",
        ));
    }
    if exp > 1 << 32 {
        errs.push(FieldError::invalid(
            &p,
            exp,
            "may not specify a duration larger than 2^32 seconds",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn token_requests() {
        let ctx = Ctx { old: None };
        assert!(validate_token_request(&json!({"spec": {"audiences": ["x"]}}), &ctx).is_empty());
        assert_eq!(
            validate_token_request(&json!({"spec": {"expirationSeconds": 60}}), &ctx)[0]
                .to_string(),
            "spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"
        );
    }
}
