//! Eviction thresholds: the signals the kubelet watches (`memory.available`,
//! `nodefs.available`, ...) and `--eviction-hard`'s thresholds on them, parsed as the
//! kubelet parses them (`memory.available<100Mi,nodefs.available<10%`), with its defaults
//! and messages.

use kyb_apimachinery::quantity::Quantity;
use std::fmt;

/// An eviction signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Signal {
    /// `memory.available`: memory capacity less the root cgroup's working set.
    MemoryAvailable,
    /// `allocatableMemory.available`: allocatable memory less the pods' working set.
    AllocatableMemoryAvailable,
    /// `nodefs.available`: free bytes of the file system of the kubelet's root directory.
    NodeFsAvailable,
    /// `nodefs.inodesFree`.
    NodeFsInodesFree,
    /// `imagefs.available`: free bytes of the runtime's image file system.
    ImageFsAvailable,
    /// `imagefs.inodesFree`.
    ImageFsInodesFree,
    /// `containerfs.available`.
    ContainerFsAvailable,
    /// `containerfs.inodesFree`.
    ContainerFsInodesFree,
    /// `pid.available`: process IDs left.
    PidAvailable,
}

impl Signal {
    /// Every signal, in the kubelet's spelling.
    pub const ALL: [Signal; 9] = [
        Signal::MemoryAvailable,
        Signal::AllocatableMemoryAvailable,
        Signal::NodeFsAvailable,
        Signal::NodeFsInodesFree,
        Signal::ImageFsAvailable,
        Signal::ImageFsInodesFree,
        Signal::ContainerFsAvailable,
        Signal::ContainerFsInodesFree,
        Signal::PidAvailable,
    ];

    /// The signal's name (`memory.available`).
    pub fn as_str(self) -> &'static str {
        match self {
            Signal::MemoryAvailable => "memory.available",
            Signal::AllocatableMemoryAvailable => "allocatableMemory.available",
            Signal::NodeFsAvailable => "nodefs.available",
            Signal::NodeFsInodesFree => "nodefs.inodesFree",
            Signal::ImageFsAvailable => "imagefs.available",
            Signal::ImageFsInodesFree => "imagefs.inodesFree",
            Signal::ContainerFsAvailable => "containerfs.available",
            Signal::ContainerFsInodesFree => "containerfs.inodesFree",
            Signal::PidAvailable => "pid.available",
        }
    }

    /// The signal named `name`.
    pub fn parse(name: &str) -> Option<Signal> {
        Signal::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// The resource a pod is evicted to reclaim when the signal's threshold is met
    /// (`memory`, `ephemeral-storage`, `inodes`, `pids`).
    pub fn resource(self) -> &'static str {
        match self {
            Signal::MemoryAvailable | Signal::AllocatableMemoryAvailable => "memory",
            Signal::NodeFsAvailable | Signal::ImageFsAvailable | Signal::ContainerFsAvailable => {
                "ephemeral-storage"
            }
            Signal::NodeFsInodesFree
            | Signal::ImageFsInodesFree
            | Signal::ContainerFsInodesFree => "inodes",
            Signal::PidAvailable => "pids",
        }
    }

    /// The node condition the signal's threshold sets when met.
    pub fn condition(self) -> &'static str {
        match self {
            Signal::MemoryAvailable | Signal::AllocatableMemoryAvailable => "MemoryPressure",
            Signal::PidAvailable => "PIDPressure",
            _ => "DiskPressure",
        }
    }
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A threshold's value: an amount, or a fraction of the signal's capacity.
#[derive(Clone, Debug)]
pub enum ThresholdValue {
    Quantity(Quantity),
    /// Between 0 and 1 (`10%` is 0.1).
    Percentage(f64),
}

impl ThresholdValue {
    /// The amount the threshold stands for on a resource of `capacity`, as the kubelet
    /// computes it (`int64(float64(capacity) * percentage)`).
    pub fn amount(&self, capacity: i64) -> i64 {
        match self {
            ThresholdValue::Quantity(q) => q.value(),
            ThresholdValue::Percentage(p) => (capacity as f64 * p) as i64,
        }
    }
}

/// One threshold: the signal is below `value` (every signal's operator is `LessThan`).
#[derive(Clone, Debug)]
pub struct Threshold {
    pub signal: Signal,
    pub value: ThresholdValue,
}

/// A set of eviction thresholds (`--eviction-hard`).
#[derive(Clone, Debug, Default)]
pub struct Thresholds(pub Vec<Threshold>);

impl Thresholds {
    /// The kubelet's default hard thresholds on Linux: `memory.available<100Mi`,
    /// `nodefs.available<10%`, `nodefs.inodesFree<5%`, `imagefs.available<15%`.
    pub fn default_hard() -> Thresholds {
        let q = |s: &str| {
            ThresholdValue::Quantity(Quantity::parse(s).unwrap_or_else(|_| Quantity::from_int(0)))
        };
        Thresholds(vec![
            Threshold {
                signal: Signal::MemoryAvailable,
                value: q("100Mi"),
            },
            Threshold {
                signal: Signal::NodeFsAvailable,
                value: ThresholdValue::Percentage(0.1),
            },
            Threshold {
                signal: Signal::NodeFsInodesFree,
                value: ThresholdValue::Percentage(0.05),
            },
            Threshold {
                signal: Signal::ImageFsAvailable,
                value: ThresholdValue::Percentage(0.15),
            },
        ])
    }

    /// Parses `--eviction-hard` (`memory.available<100Mi,nodefs.available<10%`) with the
    /// kubelet's messages. `0%` and `100%` disable a signal, as in the kubelet.
    pub fn parse(flag: &str) -> Result<Thresholds, String> {
        let mut thresholds: Vec<Threshold> = Vec::new();
        for pair in flag.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((name, value)) = pair.split_once('<') else {
                return Err(format!("malformed pair, expect string<string: {pair:?}"));
            };
            if let Some(threshold) = parse_statement(name.trim(), value.trim())? {
                thresholds.retain(|t| t.signal != threshold.signal);
                thresholds.push(threshold);
            }
        }
        Ok(Thresholds(thresholds))
    }

    /// The threshold on `signal`, if any.
    pub fn get(&self, signal: Signal) -> Option<&Threshold> {
        self.0.iter().find(|t| t.signal == signal)
    }
}

/// The kubelet's `parseThresholdStatement`.
fn parse_statement(name: &str, value: &str) -> Result<Option<Threshold>, String> {
    let signal =
        Signal::parse(name).ok_or_else(|| format!("unsupported eviction signal {name}"))?;
    if let Some(number) = value.strip_suffix('%') {
        if value == "0%" || value == "100%" {
            return Ok(None);
        }
        let percent: f64 = number
            .parse()
            .map_err(|_| format!("strconv.ParseFloat: parsing {number:?}: invalid syntax"))?;
        let fraction = percent / 100.0;
        if fraction < 0.0 {
            return Err(format!(
                "eviction percentage threshold {signal} must be >= 0%: {value}"
            ));
        }
        if fraction > 1.0 {
            return Err(format!(
                "eviction percentage threshold {signal} must be <= 100%: {value}"
            ));
        }
        return Ok(Some(Threshold {
            signal,
            value: ThresholdValue::Percentage(fraction),
        }));
    }
    let quantity = Quantity::parse(value).map_err(str::to_string)?;
    if quantity.sign() <= 0 {
        return Err(format!(
            "eviction threshold {signal} must be positive: {}",
            quantity.canonical()
        ));
    }
    Ok(Some(Threshold {
        signal,
        value: ThresholdValue::Quantity(quantity),
    }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_flag_parses_as_the_kubelet_parses_it() {
        let t = Thresholds::parse("memory.available<100Mi, nodefs.available<10%,pid.available<1k")
            .unwrap();
        assert_eq!(t.0.len(), 3);
        assert_eq!(
            t.get(Signal::MemoryAvailable).unwrap().value.amount(0),
            100 << 20
        );
        assert_eq!(
            t.get(Signal::NodeFsAvailable).unwrap().value.amount(1000),
            100
        );
        assert_eq!(t.get(Signal::PidAvailable).unwrap().value.amount(0), 1000);
        assert!(t.get(Signal::ImageFsAvailable).is_none());
        // 0% and 100% switch a signal off.
        assert!(
            Thresholds::parse("imagefs.available<0%")
                .unwrap()
                .0
                .is_empty()
        );
        assert!(Thresholds::parse("").unwrap().0.is_empty());
    }

    #[test]
    fn bad_thresholds_get_the_kubelet_s_messages() {
        assert_eq!(
            Thresholds::parse("memory.free<1Gi").unwrap_err(),
            "unsupported eviction signal memory.free"
        );
        assert_eq!(
            Thresholds::parse("memory.available<0").unwrap_err(),
            "eviction threshold memory.available must be positive: 0"
        );
        assert_eq!(
            Thresholds::parse("nodefs.available<150%").unwrap_err(),
            "eviction percentage threshold nodefs.available must be <= 100%: 150%"
        );
        assert_eq!(
            Thresholds::parse("nodefs.available<-5%").unwrap_err(),
            "eviction percentage threshold nodefs.available must be >= 0%: -5%"
        );
        assert!(
            Thresholds::parse("memory.available=1Gi")
                .unwrap_err()
                .starts_with("malformed pair")
        );
        assert!(Thresholds::parse("memory.available<1x").is_err());
    }

    #[test]
    fn the_defaults_are_the_kubelet_s() {
        let t = Thresholds::default_hard();
        assert_eq!(
            t.get(Signal::MemoryAvailable).unwrap().value.amount(0),
            104857600
        );
        assert_eq!(
            t.get(Signal::ImageFsAvailable).unwrap().value.amount(100),
            15
        );
        assert_eq!(
            t.get(Signal::NodeFsInodesFree).unwrap().value.amount(100),
            5
        );
        assert_eq!(Signal::NodeFsAvailable.condition(), "DiskPressure");
        assert_eq!(Signal::MemoryAvailable.resource(), "memory");
    }
}
