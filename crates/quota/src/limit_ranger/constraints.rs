//! The four LimitRange checks on one resource — minimum, maximum, maximum of the request
//! only (claims), maximum limit-to-request ratio — with Kubernetes' exact messages.
//!
//! Values are compared as Kubernetes does: in milli units when all three fit an `int64`
//! that way, else in whole units, each rounded up.

use kyb_apimachinery::quantity::Quantity;

use crate::resource_list::ResourceList;
use kyb_apimachinery::quantity::MAX_MILLI_VALUE;

/// Request, limit and enforced value at a common precision (`requestLimitEnforcedValues`).
fn common(req: Option<&Quantity>, lim: Option<&Quantity>, enforced: &Quantity) -> (i64, i64, i64) {
    let v = |q: Option<&Quantity>| q.map_or(0, Quantity::value);
    let (r, l, e) = (v(req), v(lim), enforced.value());
    if r <= MAX_MILLI_VALUE && l <= MAX_MILLI_VALUE && e <= MAX_MILLI_VALUE {
        let m = |q: Option<&Quantity>| q.map_or(0, Quantity::milli_value_i64);
        (m(req), m(lim), enforced.milli_value_i64())
    } else {
        (r, l, e)
    }
}

/// `min`: a request must exist and, like a limit if any, be at least `enforced`.
pub(crate) fn min(
    limit_type: &str,
    name: &str,
    enforced: &Quantity,
    requests: &ResourceList,
    limits: &ResourceList,
) -> Option<String> {
    let req = requests.get(name);
    let lim = limits.get(name);
    let (r, l, e) = common(req, lim, enforced);
    let enforced_s = enforced.canonical();
    match (req, lim) {
        (None, _) => Some(format!(
            "minimum {name} usage per {limit_type} is {enforced_s}.  No request is specified"
        )),
        (Some(req), _) if r < e => Some(format!(
            "minimum {name} usage per {limit_type} is {enforced_s}, but request is {}",
            req.canonical()
        )),
        (_, Some(lim)) if l < e => Some(format!(
            "minimum {name} usage per {limit_type} is {enforced_s}, but limit is {}",
            lim.canonical()
        )),
        _ => None,
    }
}

/// `max` for kinds without limits (claims): a request must exist and be at most `enforced`.
pub(crate) fn max_request(
    limit_type: &str,
    name: &str,
    enforced: &Quantity,
    requests: &ResourceList,
) -> Option<String> {
    let req = requests.get(name);
    let (r, _, e) = common(req, None, enforced);
    let enforced_s = enforced.canonical();
    match req {
        None => Some(format!(
            "maximum {name} usage per {limit_type} is {enforced_s}.  No request is specified"
        )),
        Some(req) if r > e => Some(format!(
            "maximum {name} usage per {limit_type} is {enforced_s}, but request is {}",
            req.canonical()
        )),
        _ => None,
    }
}

/// `max`: a limit must exist and, like a request if any, be at most `enforced`.
pub(crate) fn max(
    limit_type: &str,
    name: &str,
    enforced: &Quantity,
    requests: &ResourceList,
    limits: &ResourceList,
) -> Option<String> {
    let req = requests.get(name);
    let lim = limits.get(name);
    let (r, l, e) = common(req, lim, enforced);
    let enforced_s = enforced.canonical();
    match (req, lim) {
        (_, None) => Some(format!(
            "maximum {name} usage per {limit_type} is {enforced_s}, but no limit is specified"
        )),
        (_, Some(lim)) if l > e => Some(format!(
            "maximum {name} usage per {limit_type} is {enforced_s}, but limit is {}",
            lim.canonical()
        )),
        (Some(req), _) if r > e => Some(format!(
            "maximum {name} usage per {limit_type} is {enforced_s}, but request is {}",
            req.canonical()
        )),
        _ => None,
    }
}

/// `maxLimitRequestRatio`: limit / request must not exceed `enforced`; both must be set
/// and non-zero.
pub(crate) fn ratio(
    limit_type: &str,
    name: &str,
    enforced: &Quantity,
    requests: &ResourceList,
    limits: &ResourceList,
) -> Option<String> {
    let req = requests.get(name);
    let lim = limits.get(name);
    let (r, l, _) = common(req, lim, enforced);
    let enforced_s = enforced.canonical();
    if req.is_none() || r == 0 {
        return Some(format!(
            "{name} max limit to request ratio per {limit_type} is {enforced_s}, but no request is specified or request is 0"
        ));
    }
    if lim.is_none() || l == 0 {
        return Some(format!(
            "{name} max limit to request ratio per {limit_type} is {enforced_s}, but no limit is specified or limit is 0"
        ));
    }
    let observed = l as f64 / r as f64;
    let (scaled, max_ratio) = if enforced.value() <= MAX_MILLI_VALUE {
        (observed * 1000.0, enforced.milli_value_i64() as f64)
    } else {
        (observed, enforced.value() as f64)
    };
    (scaled > max_ratio).then(|| {
        format!(
            "{name} max limit to request ratio per {limit_type} is {enforced_s}, but provided ratio is {observed:.6}"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap_or_else(|_| Quantity::from_int(0))
    }

    fn rl(v: serde_json::Value) -> ResourceList {
        ResourceList::from_json(&v)
    }

    #[test]
    fn minimum() {
        let none = rl(json!({}));
        assert_eq!(
            min("Container", "cpu", &q("100m"), &none, &none).as_deref(),
            Some("minimum cpu usage per Container is 100m.  No request is specified")
        );
        assert_eq!(
            min(
                "Container",
                "cpu",
                &q("100m"),
                &rl(json!({"cpu": "50m"})),
                &none
            )
            .as_deref(),
            Some("minimum cpu usage per Container is 100m, but request is 50m")
        );
        assert_eq!(
            min(
                "Pod",
                "cpu",
                &q("100m"),
                &rl(json!({"cpu": "0.1"})),
                &rl(json!({"cpu": "99m"}))
            )
            .as_deref(),
            Some("minimum cpu usage per Pod is 100m, but limit is 99m")
        );
        assert_eq!(
            min("Pod", "cpu", &q("100m"), &rl(json!({"cpu": "0.1"})), &none),
            None
        );
    }

    #[test]
    fn maximum() {
        let none = rl(json!({}));
        assert_eq!(
            max("Container", "cpu", &q("2"), &rl(json!({"cpu": "1"})), &none).as_deref(),
            Some("maximum cpu usage per Container is 2, but no limit is specified")
        );
        assert_eq!(
            max(
                "Pod",
                "memory",
                &q("1Gi"),
                &none,
                &rl(json!({"memory": "2Gi"}))
            )
            .as_deref(),
            Some("maximum memory usage per Pod is 1Gi, but limit is 2Gi")
        );
        assert_eq!(
            max(
                "Pod",
                "memory",
                &q("1Gi"),
                &rl(json!({"memory": "1025Mi"})),
                &rl(json!({"memory": "1Gi"}))
            )
            .as_deref(),
            Some("maximum memory usage per Pod is 1Gi, but request is 1025Mi")
        );
        assert_eq!(
            max_request("PersistentVolumeClaim", "storage", &q("2Gi"), &none).as_deref(),
            Some(
                "maximum storage usage per PersistentVolumeClaim is 2Gi.  No request is specified"
            )
        );
        assert_eq!(
            max_request(
                "PersistentVolumeClaim",
                "storage",
                &q("2Gi"),
                &rl(json!({"storage": "3Gi"}))
            )
            .as_deref(),
            Some("maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 3Gi")
        );
    }

    #[test]
    fn limit_to_request_ratio() {
        let req = rl(json!({"cpu": "250m"}));
        let lim = rl(json!({"cpu": "1"}));
        assert_eq!(
            ratio("Container", "cpu", &q("2"), &req, &lim).as_deref(),
            Some(
                "cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000"
            )
        );
        assert_eq!(ratio("Container", "cpu", &q("4"), &req, &lim), None);
        assert_eq!(
            ratio("Container", "cpu", &q("2"), &rl(json!({"cpu": "0"})), &lim).as_deref(),
            Some(
                "cpu max limit to request ratio per Container is 2, but no request is specified or request is 0"
            )
        );
        assert_eq!(
            ratio("Container", "cpu", &q("2"), &req, &rl(json!({}))).as_deref(),
            Some(
                "cpu max limit to request ratio per Container is 2, but no limit is specified or limit is 0"
            )
        );
        assert_eq!(
            ratio(
                "Container",
                "memory",
                &q("1500m"),
                &rl(json!({"memory": "2Mi"})),
                &rl(json!({"memory": "3Mi"}))
            ),
            None
        );
    }

    #[test]
    fn huge_values_compare_in_whole_units() {
        let big = rl(json!({"memory": "100Ei"}));
        assert_eq!(
            max("Container", "memory", &q("1Ei"), &big, &big).as_deref(),
            Some("maximum memory usage per Container is 1Ei, but limit is 9223372036854775807")
        );
    }
}
