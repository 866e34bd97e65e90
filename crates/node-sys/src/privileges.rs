//! Who the process runs as: the effective user, which decides what the kernel lets it do
//! (and where `kyb` keeps its state by default).

/// The effective user id.
pub fn effective_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Whether the process runs as root (effective user id 0).
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn matches_the_owner_of_proc_self() {
        // /proc/self belongs to the process's effective user.
        let owner = std::fs::metadata("/proc/self").map(|m| m.uid());
        if let Ok(owner) = owner {
            assert_eq!(effective_uid(), owner);
            assert_eq!(is_root(), owner == 0);
        }
    }
}
