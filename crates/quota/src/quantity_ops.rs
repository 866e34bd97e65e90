//! Quantity arithmetic that `kyb_validation::quantity::Quantity` lacks, built on its public
//! API: zero, negation, subtraction, maximum, and Go's `Value()` / `MilliValue()` as `int64`.

use std::cmp::Ordering;

use kyb_validation::quantity::Quantity;

/// Go's `resource.MaxMilliValue`: the largest value whose milli form fits an `int64`.
pub(crate) const MAX_MILLI_VALUE: i64 = i64::MAX / 1000;

/// A zero quantity in the decimal SI format (`resource.Quantity{Format: DecimalSI}`).
pub(crate) fn zero() -> Quantity {
    Quantity::from_int(0)
}

/// `-q`, keeping the format. Goes through the canonical string, which is exact.
pub(crate) fn negate(q: &Quantity) -> Quantity {
    if q.is_zero() {
        return q.clone();
    }
    let s = q.canonical();
    let flipped = match s.strip_prefix('-') {
        Some(rest) => rest.to_string(),
        None => format!("-{s}"),
    };
    Quantity::parse(&flipped).unwrap_or_else(|_| zero())
}

/// `a - b` (Go's `a.Sub(b)`: a zero `a` takes `b`'s format).
pub(crate) fn sub(a: &Quantity, b: &Quantity) -> Quantity {
    a.add(&negate(b))
}

/// Whether `a > b`.
pub(crate) fn gt(a: &Quantity, b: &Quantity) -> bool {
    a.cmp_q(b) == Ordering::Greater
}

/// Go's `q.Value()`: rounded up away from zero, as an `int64`.
pub(crate) fn value(q: &Quantity) -> i64 {
    saturate(q.ceil_value())
}

/// Go's `q.MilliValue()`.
pub(crate) fn milli_value(q: &Quantity) -> i64 {
    saturate(q.milli_value())
}

fn saturate(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap_or_else(|_| zero())
    }

    #[test]
    fn negation_and_subtraction() {
        assert_eq!(negate(&q("500m")).canonical(), "-500m");
        assert_eq!(negate(&q("-2Gi")).canonical(), "2Gi");
        assert_eq!(sub(&q("1"), &q("250m")).canonical(), "750m");
        assert_eq!(sub(&q("1Gi"), &q("2Gi")).canonical(), "-1Gi");
        assert_eq!(sub(&q("0"), &q("1Ki")).canonical(), "-1Ki");
        assert!(gt(&q("2"), &q("1500m")));
        assert!(!gt(&q("1"), &q("1000m")));
    }

    #[test]
    fn go_integer_views() {
        assert_eq!(value(&q("1500m")), 2);
        assert_eq!(milli_value(&q("1.5")), 1500);
        assert_eq!(value(&q("1e30")), i64::MAX);
        assert_eq!(milli_value(&q("-1e30")), i64::MIN);
    }
}
