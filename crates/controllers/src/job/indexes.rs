//! Completion indexes of Indexed Jobs: the `batch.kubernetes.io/job-completion-index`
//! annotation of a pod, and the compressed interval lists of `status.completedIndexes`
//! (`"1,3-5,7"`, sorted, adjacent indexes joined as Kubernetes writes them).

use std::collections::BTreeSet;

/// The annotation (and, since 1.28, label) naming a pod's completion index.
pub const COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";

/// Parses an interval list; malformed or out-of-range (`>= completions`) parts are skipped.
pub fn parse(list: &str, completions: i32) -> BTreeSet<i32> {
    let mut set = BTreeSet::new();
    for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (first, last) = match part.split_once('-') {
            Some((a, b)) => (a.parse::<i32>(), b.parse::<i32>()),
            None => (part.parse::<i32>(), part.parse::<i32>()),
        };
        let (Ok(first), Ok(last)) = (first, last) else {
            continue;
        };
        for index in first.max(0)..=last.min(completions - 1) {
            set.insert(index);
        }
    }
    set
}

/// Formats a set of indexes as an interval list.
pub fn format(set: &BTreeSet<i32>) -> String {
    let mut parts: Vec<String> = vec![];
    let mut run: Option<(i32, i32)> = None;
    let flush = |parts: &mut Vec<String>, (a, b): (i32, i32)| {
        parts.push(if a == b {
            a.to_string()
        } else {
            format!("{a}-{b}")
        })
    };
    for &i in set {
        run = match run {
            Some((a, b)) if i == b + 1 => Some((a, i)),
            Some(r) => {
                flush(&mut parts, r);
                Some((i, i))
            }
            None => Some((i, i)),
        };
    }
    if let Some(r) = run {
        flush(&mut parts, r);
    }
    parts.join(",")
}

/// The completion index a pod carries (annotation first, then label), if valid.
pub fn of_pod(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> Option<i32> {
    let from = |m: &Option<std::collections::BTreeMap<String, String>>| {
        m.as_ref()
            .and_then(|m| m.get(COMPLETION_INDEX))
            .and_then(|v| v.parse::<i32>().ok())
            .filter(|i| *i >= 0)
    };
    from(&meta.annotations).or_else(|| from(&meta.labels))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_interval_lists() {
        let set = parse("0,2-4,7", 10);
        assert_eq!(set.iter().copied().collect::<Vec<_>>(), [0, 2, 3, 4, 7]);
        assert_eq!(format(&set), "0,2-4,7");
        assert_eq!(format(&parse("5,1,2,3", 10)), "1-3,5");
        assert_eq!(format(&parse("3-9,x,1", 5)), "1,3-4");
        assert_eq!(format(&BTreeSet::new()), "");
    }
}
