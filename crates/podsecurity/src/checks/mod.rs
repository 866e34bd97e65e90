//! The Pod Security Standards checks and their registry: which checks a level applies at a
//! policy version, in Kubernetes' order, and the messages built from their failures.
//!
//! Every check has an ID and one or more revisions, each applying from a policy version
//! on. A level at a version runs, for every check of that level (restricted includes
//! baseline), the newest revision not newer than the version; a check with no revision yet
//! is skipped. Restricted revisions may override baseline checks (restricted volume types
//! replace the hostPath check, for example). Checks run baseline first, then restricted,
//! each group sorted by ID, which is the order of the reasons in Kubernetes' messages.
//! `latest`, and any version newer than the newest revision, means the newest revisions.

mod apparmor;
mod capabilities;
mod host;
mod privileged;
mod proc_mount;
mod seccomp;
mod selinux;
mod sysctls;
mod users;
mod volumes;

use serde_json::Value;

use crate::level::{Level, LevelVersion, Version};
use crate::pod::PodView;

/// One failed check: Kubernetes' `ForbiddenReason` and `ForbiddenDetail`, e.g.
/// `allowPrivilegeEscalation != false` and
/// `container "c" must set securityContext.allowPrivilegeEscalation=false`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckFailure {
    pub reason: String,
    /// May be empty; then the reason is printed alone.
    pub detail: String,
}

impl CheckFailure {
    pub(crate) fn new(reason: impl Into<String>, detail: impl Into<String>) -> Self {
        CheckFailure {
            reason: reason.into(),
            detail: detail.into(),
        }
    }
}

type CheckFn = fn(&PodView<'_>) -> Option<CheckFailure>;

/// One revision of a check.
struct Revision {
    /// The first policy minor version (`v1.<since>`) the revision applies to.
    since: u64,
    check: CheckFn,
    /// Baseline check IDs this (restricted) revision replaces.
    overrides: &'static [&'static str],
}

struct Check {
    id: &'static str,
    revisions: &'static [Revision],
}

const fn rev(since: u64, check: CheckFn) -> Revision {
    Revision {
        since,
        check,
        overrides: &[],
    }
}

const fn overriding(since: u64, check: CheckFn, overrides: &'static [&'static str]) -> Revision {
    Revision {
        since,
        check,
        overrides,
    }
}

/// Baseline checks, sorted by ID (byte order, as Kubernetes sorts them).
static BASELINE: &[Check] = &[
    Check {
        id: "appArmorProfile",
        revisions: &[rev(0, apparmor::app_armor_profile_1_0)],
    },
    Check {
        id: "capabilities_baseline",
        revisions: &[rev(0, capabilities::capabilities_baseline_1_0)],
    },
    Check {
        id: "hostNamespaces",
        revisions: &[rev(0, host::host_namespaces_1_0)],
    },
    Check {
        id: "hostPathVolumes",
        revisions: &[rev(0, host::host_path_volumes_1_0)],
    },
    Check {
        id: "hostPorts",
        revisions: &[rev(0, host::host_ports_1_0)],
    },
    Check {
        id: "privileged",
        revisions: &[rev(0, privileged::privileged_1_0)],
    },
    Check {
        id: "procMount",
        revisions: &[rev(0, proc_mount::proc_mount_1_0)],
    },
    Check {
        id: "seLinuxOptions",
        revisions: &[
            rev(0, selinux::se_linux_options_1_0),
            rev(31, selinux::se_linux_options_1_31),
        ],
    },
    Check {
        id: "seccompProfile_baseline",
        revisions: &[
            rev(0, seccomp::seccomp_profile_baseline_1_0),
            rev(19, seccomp::seccomp_profile_baseline_1_19),
        ],
    },
    Check {
        id: "sysctls",
        revisions: &[
            rev(0, sysctls::sysctls_1_0),
            rev(27, sysctls::sysctls_1_27),
            rev(29, sysctls::sysctls_1_29),
            rev(32, sysctls::sysctls_1_32),
        ],
    },
    Check {
        id: "windowsHostProcess",
        revisions: &[rev(0, host::windows_host_process_1_0)],
    },
];

/// Restricted checks, sorted by ID.
static RESTRICTED: &[Check] = &[
    Check {
        id: "allowPrivilegeEscalation",
        revisions: &[
            rev(8, privileged::allow_privilege_escalation_1_8),
            rev(25, privileged::allow_privilege_escalation_1_25),
        ],
    },
    Check {
        id: "capabilities_restricted",
        revisions: &[
            overriding(
                22,
                capabilities::capabilities_restricted_1_22,
                &["capabilities_baseline"],
            ),
            overriding(
                25,
                capabilities::capabilities_restricted_1_25,
                &["capabilities_baseline"],
            ),
        ],
    },
    Check {
        id: "restrictedVolumes",
        revisions: &[overriding(
            0,
            volumes::restricted_volumes_1_0,
            &["hostPathVolumes"],
        )],
    },
    Check {
        id: "runAsNonRoot",
        revisions: &[rev(0, users::run_as_non_root_1_0)],
    },
    Check {
        id: "runAsUser",
        revisions: &[rev(23, users::run_as_user_1_23)],
    },
    Check {
        id: "seccompProfile_restricted",
        revisions: &[
            overriding(
                19,
                seccomp::seccomp_profile_restricted_1_19,
                &["seccompProfile_baseline"],
            ),
            overriding(
                25,
                seccomp::seccomp_profile_restricted_1_25,
                &["seccompProfile_baseline"],
            ),
        ],
    },
];

/// The newest policy version any check has a revision for: what `latest` means (Kubernetes
/// 1.33 evaluates `latest`, and any newer version, as `v1.32`).
pub const NEWEST_POLICY_VERSION: Version = Version::V(32);

/// The policy minor version whose revisions apply for `version`.
fn effective_minor(version: Version) -> u64 {
    let Version::V(newest) = NEWEST_POLICY_VERSION else {
        return 0;
    };
    match version {
        Version::Latest => newest,
        Version::V(minor) => minor.min(newest),
    }
}

/// The revision of `check` in force at `minor`, if any.
fn active(check: &Check, minor: u64) -> Option<&Revision> {
    check.revisions.iter().rev().find(|r| r.since <= minor)
}

/// Evaluates a pod (or pod template) against a level and version: one failure per failing
/// check, in Kubernetes' order. Empty when the pod is allowed; always empty for
/// `privileged`.
///
/// `pod_metadata` is the object's `metadata` (annotations are read from it), `pod_spec`
/// its `spec`. Missing or mistyped fields read as unset; nothing here panics.
pub fn check_pod(
    level: LevelVersion,
    pod_metadata: Option<&Value>,
    pod_spec: &Value,
) -> Vec<CheckFailure> {
    let pod = PodView::new(pod_metadata, pod_spec);
    let minor = effective_minor(level.version);
    let mut failures = Vec::new();
    let mut run = |check: &Check| {
        if let Some(revision) = active(check, minor)
            && let Some(failure) = (revision.check)(&pod)
        {
            failures.push(failure);
        }
    };
    match level.level {
        Level::Privileged => {}
        Level::Baseline => BASELINE.iter().for_each(&mut run),
        Level::Restricted => {
            let overridden = |id: &str| {
                RESTRICTED
                    .iter()
                    .filter_map(|c| active(c, minor))
                    .any(|r| r.overrides.contains(&id))
            };
            BASELINE
                .iter()
                .filter(|c| !overridden(c.id))
                .for_each(&mut run);
            RESTRICTED.iter().for_each(&mut run);
        }
    }
    failures
}

/// Kubernetes' `ForbiddenDetail`: each reason with its detail in parentheses (when there is
/// one), separated by `, `:
/// `host ports (8080, 9090), privileged (container "a" must not set ...)`.
pub fn forbidden_detail(failures: &[CheckFailure]) -> String {
    let mut out = String::new();
    for (i, failure) in failures.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&failure.reason);
        if !failure.detail.is_empty() {
            out.push_str(" (");
            out.push_str(&failure.detail);
            out.push(')');
        }
    }
    out
}

/// Kubernetes' `ForbiddenReason`: the reasons alone, separated by `, ` (the per-pod summary
/// of namespace checks).
pub fn failure_reasons(failures: &[CheckFailure]) -> String {
    let reasons: Vec<&str> = failures.iter().map(|f| f.reason.as_str()).collect();
    reasons.join(", ")
}

/// The reason a pod is rejected, as the 403 message words it after
/// `pods "<name>" is forbidden: `:
/// `violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (...), ...`.
pub fn forbidden_reason(level: LevelVersion, failures: &[CheckFailure]) -> String {
    format!(
        "violates PodSecurity {}: {}",
        kyb_apimachinery::gofmt::quote(&level.to_string()),
        forbidden_detail(failures)
    )
}

/// The warning (and audit annotation) text for violations of the warn (audit) level:
/// `would violate PodSecurity "restricted:latest": ...`.
pub fn violation_warning(level: LevelVersion, failures: &[CheckFailure]) -> String {
    format!(
        "would violate PodSecurity {}: {}",
        kyb_apimachinery::gofmt::quote(&level.to_string()),
        forbidden_detail(failures)
    )
}

#[cfg(test)]
mod tests;
