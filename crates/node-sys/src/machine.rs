//! Facts about the machine the node reports and the eviction manager watches: memory
//! (`/proc/meminfo` and the root memory cgroup's working set), CPUs, huge pages, file
//! systems (`statvfs`), process IDs, and the identity of the machine, its kernel and its
//! operating system — read from `/proc`, `/sys` and `/etc` as cAdvisor reads them for the
//! kubelet.
//!
//! Each reader has a pure parser (`parse_*`) over the file's text, tested on its own, and a
//! function reading the machine's file.

use std::path::{Path, PathBuf};

/// Why a machine fact could not be read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("parsing {path}: {message}")]
    Parse { path: PathBuf, message: String },
}

fn read(path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|source| Error::Read {
        path: path.to_path_buf(),
        source,
    })
}

fn parse_error(path: &Path, message: impl Into<String>) -> Error {
    Error::Parse {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// Memory as `/proc/meminfo` gives it, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemInfo {
    /// `MemTotal`: the node's memory capacity.
    pub total: u64,
    /// `MemAvailable`.
    pub available: u64,
}

/// Parses `/proc/meminfo` (`MemTotal:  8148204 kB`); `None` names the missing field.
pub fn parse_meminfo(text: &str) -> Result<MemInfo, String> {
    let field = |name: &str| -> Result<u64, String> {
        let line = text
            .lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .ok_or_else(|| format!("no {name} line"))?;
        let mut words = line.split_whitespace();
        let value: u64 = words
            .next()
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("{name} is not a number: {line:?}"))?;
        match words.next() {
            Some("kB") => Ok(value.saturating_mul(1024)),
            None => Ok(value),
            Some(unit) => Err(format!("{name} has an unknown unit {unit:?}")),
        }
    };
    Ok(MemInfo {
        total: field("MemTotal")?,
        available: field("MemAvailable")?,
    })
}

/// The machine's memory from `/proc/meminfo`.
pub fn meminfo() -> Result<MemInfo, Error> {
    let path = Path::new("/proc/meminfo");
    parse_meminfo(&read(path)?).map_err(|m| parse_error(path, m))
}

/// Counts the CPUs of a kernel CPU list (`0-3,8,10-11`), as in
/// `/sys/devices/system/cpu/online`.
pub fn parse_cpu_list(text: &str) -> Result<u32, String> {
    let mut count = 0u32;
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let number = |s: &str| {
            s.trim()
                .parse::<u32>()
                .map_err(|_| format!("{part:?} is not a CPU number or range"))
        };
        match part.split_once('-') {
            Some((first, last)) => {
                let (first, last) = (number(first)?, number(last)?);
                if last < first {
                    return Err(format!("{part:?} is a range backwards"));
                }
                count += last - first + 1;
            }
            None => {
                number(part)?;
                count += 1;
            }
        }
    }
    if count == 0 {
        return Err("no CPUs listed".to_string());
    }
    Ok(count)
}

/// The number of online CPUs (the node's `cpu` capacity).
pub fn cpu_count() -> Result<u32, Error> {
    let path = Path::new("/sys/devices/system/cpu/online");
    parse_cpu_list(&read(path)?).map_err(|m| parse_error(path, m))
}

/// One huge page size and how many pages of it the kernel holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HugePages {
    /// The page size in bytes.
    pub page_size: u64,
    /// `nr_hugepages`.
    pub count: u64,
}

/// The huge page sizes of `/sys/kernel/mm/hugepages` (`hugepages-2048kB/nr_hugepages`),
/// smallest first; empty when the kernel has none.
pub fn huge_pages() -> Result<Vec<HugePages>, Error> {
    huge_pages_at(Path::new("/sys/kernel/mm/hugepages"))
}

fn huge_pages_at(dir: &Path) -> Result<Vec<HugePages>, Error> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(Error::Read {
                path: dir.to_path_buf(),
                source,
            });
        }
    };
    let mut pages = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(page_size) = name.to_str().and_then(parse_huge_page_dir) else {
            continue;
        };
        let path = entry.path().join("nr_hugepages");
        let count = read(&path)?
            .trim()
            .parse()
            .map_err(|_| parse_error(&path, "not a number"))?;
        pages.push(HugePages { page_size, count });
    }
    pages.sort_by_key(|p| p.page_size);
    Ok(pages)
}

/// The page size in bytes of a directory named `hugepages-2048kB`.
pub fn parse_huge_page_dir(name: &str) -> Option<u64> {
    let kb: u64 = name
        .strip_prefix("hugepages-")?
        .strip_suffix("kB")?
        .parse()
        .ok()?;
    kb.checked_mul(1024)
}

/// A file system's size and free space, from `statvfs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FsStats {
    /// Total bytes.
    pub capacity: u64,
    /// Bytes available to unprivileged users.
    pub available: u64,
    /// Total inodes.
    pub inodes: u64,
    /// Free inodes.
    pub inodes_free: u64,
}

/// The size and free space of the file system holding `path`.
pub fn fs_stats(path: &Path) -> Result<FsStats, Error> {
    let stat = rustix::fs::statvfs(path).map_err(|errno| Error::Read {
        path: path.to_path_buf(),
        source: errno.into(),
    })?;
    let fragment = stat.f_frsize;
    Ok(FsStats {
        capacity: stat.f_blocks.saturating_mul(fragment),
        available: stat.f_bavail.saturating_mul(fragment),
        inodes: stat.f_files,
        inodes_free: stat.f_ffree,
    })
}

/// The memory working set of the whole machine as the kubelet measures it for
/// `memory.available`: the root memory cgroup's usage less its inactive file pages
/// (cgroup v1: `memory.usage_in_bytes` − `total_inactive_file`). On cgroup v2, whose root
/// has no usage file, `MemTotal − MemAvailable`.
pub fn memory_working_set() -> Result<u64, Error> {
    let root = Path::new(crate::cgroup::ROOT).join("memory");
    let usage_path = root.join("memory.usage_in_bytes");
    if usage_path.is_file() {
        let usage: u64 = read(&usage_path)?
            .trim()
            .parse()
            .map_err(|_| parse_error(&usage_path, "not a number"))?;
        let stat_path = root.join("memory.stat");
        let inactive = parse_memory_stat(&read(&stat_path)?, "total_inactive_file").unwrap_or(0);
        return Ok(usage.saturating_sub(inactive));
    }
    let info = meminfo()?;
    Ok(info.total.saturating_sub(info.available))
}

/// One counter of a cgroup's `memory.stat` (`total_inactive_file 1234`).
pub fn parse_memory_stat(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (name, value) = line.split_once(' ')?;
        (name == key).then(|| value.trim().parse().ok())?
    })
}

/// The CPU time the whole machine has used, in core-nanoseconds, as cAdvisor reads the
/// root cgroup: `cpuacct.usage` on cgroup v1, `cpu.stat`'s `usage_usec` on v2; the
/// non-idle time of `/proc/stat`'s `cpu` line where neither exists.
pub fn cpu_usage_core_nanoseconds() -> Result<u64, Error> {
    let root = Path::new(crate::cgroup::ROOT);
    let v1 = root.join("cpuacct/cpuacct.usage");
    if v1.is_file() {
        return read(&v1)?
            .trim()
            .parse()
            .map_err(|_| parse_error(&v1, "not a number"));
    }
    let v2 = root.join("cpu.stat");
    if v2.is_file()
        && let Some(usec) = parse_memory_stat(&read(&v2)?, "usage_usec")
    {
        return Ok(usec.saturating_mul(1000));
    }
    let path = Path::new("/proc/stat");
    parse_proc_stat_busy(&read(path)?)
        .map(|ticks| ticks.saturating_mul(NANOS_PER_USER_HZ_TICK))
        .ok_or_else(|| parse_error(path, "no cpu line"))
}

/// Nanoseconds in one `USER_HZ` tick (100 Hz on every Linux architecture Kubernetes runs on).
const NANOS_PER_USER_HZ_TICK: u64 = 10_000_000;

/// The busy ticks of `/proc/stat`'s aggregate `cpu` line: everything but `idle` and
/// `iowait` (and the guest times, already counted in `user` and `nice`).
pub fn parse_proc_stat_busy(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let values: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal guest guest_nice
    let busy = [0usize, 1, 2, 5, 6, 7]
        .iter()
        .filter_map(|&i| values.get(i))
        .sum();
    Some(busy)
}

/// When the machine booted, in seconds since the epoch (`/proc/stat`'s `btime`): the start
/// time the Summary API gives the node.
pub fn boot_time() -> Result<i64, Error> {
    let path = Path::new("/proc/stat");
    parse_btime(&read(path)?).ok_or_else(|| parse_error(path, "no btime line"))
}

/// `btime 1700000000` of `/proc/stat`.
pub fn parse_btime(text: &str) -> Option<i64> {
    text.lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()
}

/// Process IDs: the most the kernel hands out and how many are in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pids {
    /// The lesser of `kernel.pid_max` and `kernel.threads-max`.
    pub max: u64,
    /// Processes and threads that exist now (`/proc/loadavg`'s fourth field's total).
    pub running: u64,
}

/// The number of scheduling entities in `/proc/loadavg` (`0.00 0.01 0.05 1/123 4567`).
pub fn parse_loadavg_entities(text: &str) -> Option<u64> {
    text.split_whitespace()
        .nth(3)?
        .split_once('/')?
        .1
        .parse()
        .ok()
}

/// The machine's process IDs in use and their limit (the `pid.available` signal).
pub fn pids() -> Result<Pids, Error> {
    let number = |path: &str| -> Result<u64, Error> {
        let path = Path::new(path);
        read(path)?
            .trim()
            .parse()
            .map_err(|_| parse_error(path, "not a number"))
    };
    let max = number("/proc/sys/kernel/pid_max")?.min(number("/proc/sys/kernel/threads-max")?);
    let path = Path::new("/proc/loadavg");
    let running =
        parse_loadavg_entities(&read(path)?).ok_or_else(|| parse_error(path, "no task count"))?;
    Ok(Pids { max, running })
}

/// The operating system's name: `PRETTY_NAME` of an os-release file, unquoted; `Linux`
/// when it has none, as cAdvisor reports.
pub fn parse_os_release(text: &str) -> String {
    text.lines()
        .find_map(|line| line.trim().strip_prefix("PRETTY_NAME="))
        .map(|value| {
            let value = value.trim();
            let unquoted = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
                .unwrap_or(value);
            unquoted.replace("\\\"", "\"")
        })
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "Linux".to_string())
}

/// The operating system image (`/etc/os-release`, else `/usr/lib/os-release`).
pub fn os_image() -> String {
    ["/etc/os-release", "/usr/lib/os-release"]
        .iter()
        .find_map(|path| std::fs::read_to_string(path).ok())
        .map(|text| parse_os_release(&text))
        .unwrap_or_else(|| "Linux".to_string())
}

/// The machine's identity and its kernel, as the Node's `nodeInfo` reports them. Fields
/// the machine does not offer (no DMI table in a small VM) are empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Identity {
    /// `/etc/machine-id` (or D-Bus's copy).
    pub machine_id: String,
    /// `/sys/class/dmi/id/product_uuid`.
    pub system_uuid: String,
    /// `/proc/sys/kernel/random/boot_id`.
    pub boot_id: String,
    /// `uname -r`: `/proc/sys/kernel/osrelease`.
    pub kernel_version: String,
    /// `/proc/sys/kernel/hostname`.
    pub hostname: String,
}

/// The machine's identity, each field read on its own (an unreadable one stays empty).
pub fn identity() -> Identity {
    let first = |paths: &[&str]| {
        paths
            .iter()
            .find_map(|p| std::fs::read_to_string(p).ok())
            .map(|text| text.trim().to_string())
            .unwrap_or_default()
    };
    Identity {
        machine_id: first(&["/etc/machine-id", "/var/lib/dbus/machine-id"]),
        system_uuid: first(&["/sys/class/dmi/id/product_uuid"]),
        boot_id: first(&["/proc/sys/kernel/random/boot_id"]),
        kernel_version: first(&["/proc/sys/kernel/osrelease"]),
        hostname: first(&["/proc/sys/kernel/hostname"]),
    }
}

/// Go's `GOARCH` for this build's architecture (`amd64`, `arm64`, ...).
pub fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "x86" => "386",
        "aarch64" => "arm64",
        "arm" => "arm",
        "powerpc64" => "ppc64le",
        "s390x" => "s390x",
        "riscv64" => "riscv64",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn meminfo_is_read_in_bytes() {
        let text =
            "MemTotal:        8148204 kB\nMemFree:          123 kB\nMemAvailable:    4000000 kB\n";
        assert_eq!(
            parse_meminfo(text).unwrap(),
            MemInfo {
                total: 8148204 * 1024,
                available: 4000000 * 1024
            }
        );
        assert_eq!(
            parse_meminfo("MemTotal: 1 kB\n").unwrap_err(),
            "no MemAvailable line"
        );
        assert!(parse_meminfo("MemTotal: x kB\nMemAvailable: 1 kB").is_err());
        // `MemTotalX` is not `MemTotal`.
        assert!(parse_meminfo("MemTotalX: 1 kB\nMemAvailable: 1 kB").is_err());
    }

    #[test]
    fn cpu_lists_count_ranges_and_singles() {
        assert_eq!(parse_cpu_list("0-1\n").unwrap(), 2);
        assert_eq!(parse_cpu_list("0-3,8,10-11").unwrap(), 7);
        assert_eq!(parse_cpu_list("0").unwrap(), 1);
        assert!(parse_cpu_list("").is_err());
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("a").is_err());
    }

    #[test]
    fn huge_page_directories_give_their_size() {
        assert_eq!(parse_huge_page_dir("hugepages-2048kB"), Some(2 << 20));
        assert_eq!(parse_huge_page_dir("hugepages-1048576kB"), Some(1 << 30));
        assert_eq!(parse_huge_page_dir("other"), None);
    }

    #[test]
    fn huge_pages_read_from_a_directory() {
        let dir = tempdir();
        std::fs::create_dir(dir.join("hugepages-2048kB")).unwrap();
        std::fs::write(dir.join("hugepages-2048kB/nr_hugepages"), "4\n").unwrap();
        std::fs::create_dir(dir.join("hugepages-1048576kB")).unwrap();
        std::fs::write(dir.join("hugepages-1048576kB/nr_hugepages"), "0\n").unwrap();
        assert_eq!(
            huge_pages_at(&dir).unwrap(),
            vec![
                HugePages {
                    page_size: 2 << 20,
                    count: 4
                },
                HugePages {
                    page_size: 1 << 30,
                    count: 0
                }
            ]
        );
        assert!(huge_pages_at(&dir.join("absent")).unwrap().is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn tempdir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "kyb-machine-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn memory_stat_counters() {
        let text = "cache 10\ntotal_inactive_file 4096\ntotal_active_file 1\n";
        assert_eq!(parse_memory_stat(text, "total_inactive_file"), Some(4096));
        assert_eq!(parse_memory_stat(text, "inactive_file"), None);
    }

    #[test]
    fn loadavg_gives_the_number_of_tasks() {
        assert_eq!(
            parse_loadavg_entities("0.00 0.01 0.05 1/123 4567\n"),
            Some(123)
        );
        assert_eq!(parse_loadavg_entities("0.00 0.01"), None);
    }

    #[test]
    fn os_release_pretty_name() {
        let text = "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n";
        assert_eq!(parse_os_release(text), "Debian GNU/Linux 12 (bookworm)");
        assert_eq!(parse_os_release("PRETTY_NAME=Alpine"), "Alpine");
        assert_eq!(parse_os_release("ID=x\n"), "Linux");
    }

    #[test]
    fn this_machine_s_facts_are_consistent() {
        let mem = meminfo().unwrap();
        assert!(mem.total > 0 && mem.available <= mem.total, "{mem:?}");
        assert!(cpu_count().unwrap() >= 1);
        let fs = fs_stats(Path::new("/")).unwrap();
        assert!(fs.capacity > 0 && fs.available <= fs.capacity, "{fs:?}");
        assert!(fs_stats(Path::new("/nonexistent/kyb")).is_err());
        let pids = pids().unwrap();
        assert!(pids.running >= 1 && pids.running < pids.max, "{pids:?}");
        let identity = identity();
        assert!(!identity.kernel_version.is_empty(), "{identity:?}");
        assert_eq!(identity.boot_id.len(), 36, "{identity:?}");
        assert!(memory_working_set().unwrap() > 0);
        let first = cpu_usage_core_nanoseconds().unwrap();
        assert!(first > 0);
        assert!(cpu_usage_core_nanoseconds().unwrap() >= first);
        assert!(boot_time().unwrap() > 1_000_000_000);
    }

    #[test]
    fn proc_stat_busy_ticks_and_boot_time() {
        let text = "cpu  100 20 30 1000 50 6 7 8 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\nbtime 1700000000\n";
        assert_eq!(parse_proc_stat_busy(text), Some(100 + 20 + 30 + 6 + 7 + 8));
        assert_eq!(parse_proc_stat_busy("cpu0 1 2 3\n"), None);
        assert_eq!(parse_btime(text), Some(1_700_000_000));
        assert_eq!(parse_btime("cpu 1\n"), None);
    }
}
