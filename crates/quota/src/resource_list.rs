//! `ResourceList`: resource name → quantity, with the set algebra of Kubernetes'
//! `k8s.io/apiserver/pkg/quota/v1` helpers (add, subtract, mask, less-or-equal, remove
//! zeros) and the printing used in quota messages (`pods=1,requests.cpu=500m`).
//!
//! Names are kept sorted (byte order, as Go's `sort.Strings`), which makes every
//! printed list and every iteration deterministic.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use kyb_apimachinery::quantity::Quantity;
use serde_json::{Map, Value};

/// Resource name → quantity.
#[derive(Clone, Debug, Default)]
pub struct ResourceList(BTreeMap<String, Quantity>);

impl ResourceList {
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads a JSON resource list (`{"cpu": "500m", ...}`). Anything but an object reads as
    /// empty; entries whose quantity does not parse are left out (the API server refuses
    /// such objects before they reach admission, so this only guards against corrupt data).
    pub fn from_json(v: &Value) -> Self {
        let mut out = Self::new();
        if let Value::Object(m) = v {
            for (k, q) in m {
                if let Ok(q) = Quantity::from_json(q) {
                    out.0.insert(k.clone(), q);
                }
            }
        }
        out
    }

    /// Like [`ResourceList::from_json`] for an optional value.
    pub fn from_opt(v: Option<&Value>) -> Self {
        v.map(Self::from_json).unwrap_or_default()
    }

    /// The list as a JSON object of canonical quantity strings.
    pub fn to_json(&self) -> Value {
        Value::Object(
            self.0
                .iter()
                .map(|(k, q)| (k.clone(), Value::String(q.canonical())))
                .collect::<Map<String, Value>>(),
        )
    }

    pub fn get(&self, name: &str) -> Option<&Quantity> {
        self.0.get(name)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    pub fn insert(&mut self, name: impl Into<String>, q: Quantity) {
        self.0.insert(name.into(), q);
    }

    pub fn remove(&mut self, name: &str) -> Option<Quantity> {
        self.0.remove(name)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Resource names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &Quantity)> {
        self.0.iter().map(|(k, q)| (k.as_str(), q))
    }

    /// Adds `q` to the entry `name` (inserting it when absent).
    pub fn add_one(&mut self, name: &str, q: &Quantity) {
        match self.0.get_mut(name) {
            Some(v) => *v = v.add(q),
            None => {
                self.0.insert(name.to_string(), q.clone());
            }
        }
    }

    /// `self += other`, entry by entry (the union of names).
    pub fn add_assign(&mut self, other: &ResourceList) {
        for (k, q) in &other.0 {
            self.add_one(k, q);
        }
    }

    /// `quota.Add(self, other)`.
    pub fn add(&self, other: &ResourceList) -> ResourceList {
        let mut out = self.clone();
        out.add_assign(other);
        out
    }

    /// `quota.Subtract(self, other)`: the union of names, a missing side counting as zero.
    pub fn sub(&self, other: &ResourceList) -> ResourceList {
        let mut out = self.clone();
        for (k, q) in &other.0 {
            let left = out
                .0
                .get(k)
                .cloned()
                .unwrap_or_else(|| Quantity::from_int(0));
            out.0.insert(k.clone(), left.sub(q));
        }
        out
    }

    /// `quota.SubtractWithNonNegativeResult(self, other)`: `self - other` per name, clamped
    /// at zero; names only in `other` are present with zero.
    pub fn sub_non_negative(&self, other: &ResourceList) -> ResourceList {
        let mut out = ResourceList::new();
        for (k, q) in &self.0 {
            let v = match other.0.get(k) {
                Some(o) => q.sub(o),
                None => q.clone(),
            };
            let v = if v.sign() > 0 {
                v
            } else {
                Quantity::from_int(0)
            };
            out.0.insert(k.clone(), v);
        }
        for k in other.0.keys() {
            out.0
                .entry(k.clone())
                .or_insert_with(|| Quantity::from_int(0));
        }
        out
    }

    /// `maxResourceList`: each entry of `other` replaces a smaller (or missing) entry.
    pub fn max_assign(&mut self, other: &ResourceList) {
        for (k, q) in &other.0 {
            match self.0.get_mut(k) {
                Some(v) if !q.cmp_q(v).is_gt() => {}
                Some(v) => *v = q.clone(),
                None => {
                    self.0.insert(k.clone(), q.clone());
                }
            }
        }
    }

    /// `quota.Mask`: only the entries whose name `keep` accepts.
    pub fn mask(&self, keep: impl Fn(&str) -> bool) -> ResourceList {
        ResourceList(
            self.0
                .iter()
                .filter(|(k, _)| keep(k))
                .map(|(k, q)| (k.clone(), q.clone()))
                .collect(),
        )
    }

    /// `quota.LessThanOrEqual(self, other)`: the names present in both where `self` is
    /// larger (empty when `self <= other`).
    pub fn exceeding(&self, other: &ResourceList) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, q)| other.0.get(*k).is_some_and(|o| q.cmp_q(o).is_gt()))
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Whether `self <= other` for every name present in both (`quota.LessThanOrEqual`).
    pub fn le(&self, other: &ResourceList) -> bool {
        self.exceeding(other).is_empty()
    }

    /// `quota.RemoveZeros`.
    pub fn remove_zeros(&mut self) {
        self.0.retain(|_, q| !q.is_zero());
    }

    /// `quota.IsNegative`: the names with a negative quantity.
    pub fn negative_names(&self) -> Vec<String> {
        self.0
            .iter()
            .filter(|(_, q)| q.sign() < 0)
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// `quota.Equals`: the same names with equal quantities.
    pub fn equals(&self, other: &ResourceList) -> bool {
        self.0.len() == other.0.len()
            && self.0.iter().all(|(k, q)| {
                other
                    .0
                    .get(k)
                    .is_some_and(|o| q.cmp_q(o) == Ordering::Equal)
            })
    }

    /// The quota admission's `prettyPrint`: `name=quantity` pairs, sorted, joined by `,`.
    pub fn pretty(&self) -> String {
        let mut out = String::new();
        for (i, (k, q)) in self.0.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(k);
            out.push('=');
            out.push_str(&q.canonical());
        }
        out
    }
}

impl PartialEq for ResourceList {
    fn eq(&self, other: &Self) -> bool {
        self.equals(other)
    }
}

impl FromIterator<(String, Quantity)> for ResourceList {
    fn from_iter<T: IntoIterator<Item = (String, Quantity)>>(iter: T) -> Self {
        ResourceList(iter.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rl(v: Value) -> ResourceList {
        ResourceList::from_json(&v)
    }

    #[test]
    fn parses_and_prints_canonically() {
        let l = rl(json!({"memory": "1024Mi", "cpu": "0.5", "bad": "1x", "n": 3}));
        assert_eq!(
            l.to_json(),
            json!({"cpu": "500m", "memory": "1Gi", "n": "3"})
        );
        assert_eq!(l.pretty(), "cpu=500m,memory=1Gi,n=3");
        assert!(ResourceList::from_json(&json!("nope")).is_empty());
    }

    #[test]
    fn set_algebra() {
        let a = rl(json!({"cpu": "1", "pods": "2"}));
        let b = rl(json!({"cpu": "1500m", "memory": "1Gi"}));
        assert_eq!(a.add(&b).pretty(), "cpu=2500m,memory=1Gi,pods=2");
        assert_eq!(a.sub(&b).pretty(), "cpu=-500m,memory=-1Gi,pods=2");
        assert_eq!(a.sub_non_negative(&b).pretty(), "cpu=0,memory=0,pods=2");
        assert_eq!(b.exceeding(&a), vec!["cpu".to_string()]);
        assert!(a.exceeding(&b).is_empty());
        assert!(a.le(&b) && !b.le(&a));
        let mut m = a.clone();
        m.max_assign(&b);
        assert_eq!(m.pretty(), "cpu=1500m,memory=1Gi,pods=2");
        assert_eq!(a.mask(|n| n == "pods").pretty(), "pods=2");
        let mut z = a.sub_non_negative(&b);
        z.remove_zeros();
        assert_eq!(z.pretty(), "pods=2");
        assert_eq!(a.sub(&b).negative_names(), vec!["cpu", "memory"]);
        assert!(rl(json!({"cpu": "1"})).equals(&rl(json!({"cpu": "1000m"}))));
        assert!(!rl(json!({"cpu": "1"})).equals(&rl(json!({"cpu": "1", "x": "0"}))));
    }
}
