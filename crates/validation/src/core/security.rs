//! Security contexts of pods and containers: user and group IDs, seccomp and AppArmor
//! profiles, proc mount, privilege escalation, sysctls, Windows options.

use serde_json::Value;

use crate::core::volumes::validate_local_descending_path;
use kyb_apimachinery::field::FieldError;
use kyb_apimachinery::field::Path;
use kyb_apimachinery::json::{Obj, field};
use kyb_apimachinery::names;

const MAX_ID: i64 = 0xffff_ffff;

fn validate_id(v: &Value, key: &str, path: &Path) -> Vec<FieldError> {
    match v.int(key) {
        Some(id) if !(0..=MAX_ID).contains(&id) => {
            vec![FieldError::invalid(
                &path.child(key),
                id,
                names::inclusive_range_error(0, MAX_ID),
            )]
        }
        _ => Vec::new(),
    }
}

/// `validateSeccompProfileField`.
pub(crate) fn validate_seccomp_profile(sp: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if sp.is_null() {
        return errs;
    }
    let t = sp.str("type");
    match t {
        "Localhost" | "RuntimeDefault" | "Unconfined" => {}
        "" => errs.push(FieldError::required(
            &path.child("type"),
            "type is required when seccompProfile is set",
        )),
        other => errs.push(FieldError::not_supported(
            &path.child("type"),
            other,
            &["Localhost", "RuntimeDefault", "Unconfined"],
        )),
    }
    if t == "Localhost" {
        match sp.opt_str("localhostProfile") {
            None => errs.push(FieldError::required(
                &path.child("localhostProfile"),
                "must be set when seccomp type is Localhost",
            )),
            Some(p) => errs.extend(validate_local_descending_path(
                p,
                &path.child("localhostProfile"),
            )),
        }
    } else if sp.has("localhostProfile") {
        errs.push(FieldError::invalid(
            &path.child("localhostProfile"),
            sp.clone(),
            "can only be set when seccomp type is Localhost",
        ));
    }
    errs
}

/// `ValidateAppArmorProfileField`.
pub(crate) fn validate_apparmor_profile(profile: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if profile.is_null() {
        return errs;
    }
    match profile.str("type") {
        "Localhost" => match profile.opt_str("localhostProfile") {
            None => errs.push(FieldError::required(
                &path.child("localhostProfile"),
                "must be set when AppArmor type is Localhost",
            )),
            Some(p) => {
                if p.trim() != p {
                    errs.push(FieldError::invalid(
                        &path.child("localhostProfile"),
                        p,
                        "must not be padded with whitespace",
                    ));
                } else if p.is_empty() {
                    errs.push(FieldError::required(
                        &path.child("localhostProfile"),
                        "must be set when AppArmor type is Localhost",
                    ));
                }
                if p.len() > 4095 {
                    errs.push(FieldError::too_long(&path.child("localhostProfile"), 4095));
                }
            }
        },
        "RuntimeDefault" | "Unconfined" => {
            if let Some(p) = profile.get_field("localhostProfile") {
                errs.push(FieldError::invalid(
                    &path.child("localhostProfile"),
                    p.clone(),
                    "can only be set when AppArmor type is Localhost",
                ));
            }
        }
        "" => errs.push(FieldError::required(
            &path.child("type"),
            "type is required when appArmorProfile is set",
        )),
        other => errs.push(FieldError::not_supported(
            &path.child("type"),
            other,
            &["Localhost", "RuntimeDefault", "Unconfined"],
        )),
    }
    errs
}

fn validate_windows_options(w: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if w.is_null() {
        return errs;
    }
    if let Some(n) = w.opt_str("gmsaCredentialSpecName") {
        for m in names::dns1123_subdomain_errors(n) {
            errs.push(FieldError::invalid(
                &path.child("gmsaCredentialSpecName"),
                n,
                m,
            ));
        }
    }
    if let Some(s) = w.opt_str("gmsaCredentialSpec") {
        if s.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("gmsaCredentialSpec"),
                s,
                "gmsaCredentialSpec cannot be an empty string",
            ));
        } else if s.len() > 64 * 1024 {
            errs.push(FieldError::invalid(
                &path.child("gmsaCredentialSpec"),
                s,
                "gmsaCredentialSpec size must be under 64 KiB",
            ));
        }
    }
    if let Some(u) = w.opt_str("runAsUserName") {
        let p = path.child("runAsUserName");
        if u.is_empty() {
            errs.push(FieldError::invalid(
                &p,
                u,
                "runAsUserName cannot be an empty string",
            ));
        } else if u.chars().any(char::is_control) {
            errs.push(FieldError::invalid(
                &p,
                u,
                "runAsUserName cannot contain control characters",
            ));
        } else {
            let parts: Vec<&str> = u.split('\\').collect();
            match parts.as_slice() {
                [user] => errs.extend(validate_windows_user(user, u, &p)),
                [domain, user] => {
                    if domain.len() >= 256 {
                        errs.push(FieldError::invalid(
                            &p,
                            u,
                            "runAsUserName's Domain length must be under 256 characters",
                        ));
                    }
                    errs.extend(validate_windows_user(user, u, &p));
                }
                _ => errs.push(FieldError::invalid(
                    &p,
                    u,
                    "runAsUserName cannot contain more than one backslash",
                )),
            }
        }
    }
    errs
}

fn validate_windows_user(user: &str, full: &str, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if user.is_empty() {
        errs.push(FieldError::invalid(
            path,
            full,
            "runAsUserName's User cannot be empty",
        ));
    } else if user.len() > 104 {
        errs.push(FieldError::invalid(
            path,
            full,
            "runAsUserName's User length must not be longer than 104 characters",
        ));
    }
    if !user.is_empty() && user.chars().all(|c| c == '.' || c == ' ') {
        errs.push(FieldError::invalid(
            path,
            full,
            "runAsUserName's User cannot contain only periods or spaces",
        ));
    }
    if user.chars().any(|c| "\"/\\:;|=,+*?<>@[]".contains(c)) {
        errs.push(FieldError::invalid(
            path,
            full,
            "runAsUserName's User cannot contain the following characters: \"/\\:;|=,+*?<>@[]",
        ));
    }
    errs
}

/// `ValidateSecurityContext` for a container.
pub(crate) fn validate_security_context(
    sc: &Value,
    host_users: bool,
    path: &Path,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if sc.is_null() {
        return errs;
    }
    errs.extend(validate_id(sc, "runAsUser", path));
    errs.extend(validate_id(sc, "runAsGroup", path));
    if let Some(pm) = sc.opt_str("procMount") {
        if pm != "Default" && pm != "Unmasked" {
            errs.push(FieldError::not_supported(
                &path.child("procMount"),
                pm,
                &["Default", "Unmasked"],
            ));
        }
        if host_users && pm == "Unmasked" {
            errs.push(FieldError::invalid(
                &path.child("procMount"),
                pm,
                "`hostUsers` must be false to use `Unmasked`",
            ));
        }
    }
    errs.extend(validate_seccomp_profile(
        field(sc, "seccompProfile"),
        &path.child("seccompProfile"),
    ));
    if sc.opt_flag("allowPrivilegeEscalation") == Some(false) {
        if sc.flag("privileged") {
            errs.push(FieldError::invalid(
                path,
                sc.clone(),
                "cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
            ));
        }
        if field(sc, "capabilities")
            .str_list("add")
            .contains(&"CAP_SYS_ADMIN")
        {
            errs.push(FieldError::invalid(
                path,
                sc.clone(),
                "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
            ));
        }
    }
    errs.extend(validate_windows_options(
        field(sc, "windowsOptions"),
        &path.child("windowsOptions"),
    ));
    errs.extend(validate_apparmor_profile(
        field(sc, "appArmorProfile"),
        &path.child("appArmorProfile"),
    ));
    errs
}

const SYSCTL_REGEX: &str =
    "^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$";

fn is_valid_sysctl_name(name: &str) -> bool {
    if name.len() > 253 {
        return false;
    }
    name.split(['.', '/']).all(|seg| {
        let b = seg.as_bytes();
        match (b.first(), b.last()) {
            (Some(&f), Some(&l)) => {
                let ok = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
                ok(f) && ok(l) && b.iter().all(|&c| ok(c) || c == b'-' || c == b'_')
            }
            _ => false,
        }
    })
}

/// The kernel namespace a sysctl belongs to: "net", "ipc" or none.
fn sysctl_namespace(name: &str) -> Option<&'static str> {
    let n = name.replace('/', ".");
    if n.starts_with("net.") {
        Some("net")
    } else if n == "kernel.sem"
        || n.starts_with("kernel.shm")
        || n.starts_with("kernel.msg")
        || n.starts_with("fs.mqueue.")
    {
        Some("ipc")
    } else {
        None
    }
}

fn validate_sysctls(sc: &Value, spec: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for (i, s) in sc.arr("sysctls").iter().enumerate() {
        let p = path.index(i).child("name");
        let name = s.str("name");
        if name.is_empty() {
            errs.push(FieldError::required(&p, ""));
        } else if !is_valid_sysctl_name(name) {
            errs.push(FieldError::invalid(
                &p,
                name,
                format!("must have at most 253 characters and match regex {SYSCTL_REGEX}"),
            ));
        } else if seen.contains(name) {
            errs.push(FieldError::duplicate(&p, name));
        }
        match sysctl_namespace(name) {
            Some("net") if spec.flag("hostNetwork") => {
                errs.push(FieldError::invalid(
                    &p,
                    name,
                    "may not be specified when 'hostNetwork' is true",
                ));
            }
            Some("ipc") if spec.flag("hostIPC") => {
                errs.push(FieldError::invalid(
                    &p,
                    name,
                    "may not be specified when 'hostIPC' is true",
                ));
            }
            _ => {}
        }
        seen.insert(name);
    }
    errs
}

/// `validatePodSpecSecurityContext`.
pub(crate) fn validate_pod_security_context(
    sc: &Value,
    spec: &Value,
    spec_path: &Path,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let path = spec_path.child("securityContext");
    if sc.is_null() {
        return errs;
    }
    errs.extend(validate_id(sc, "fsGroup", &path));
    errs.extend(validate_id(sc, "runAsUser", &path));
    errs.extend(validate_id(sc, "runAsGroup", &path));
    for (i, g) in sc.arr("supplementalGroups").iter().enumerate() {
        let g = kyb_apimachinery::json::as_int(g).unwrap_or(0);
        if !(0..=MAX_ID).contains(&g) {
            errs.push(FieldError::invalid(
                &path.child("supplementalGroups").index(i),
                g,
                names::inclusive_range_error(0, MAX_ID),
            ));
        }
    }
    if spec.opt_flag("shareProcessNamespace") == Some(true) && spec.flag("hostPID") {
        errs.push(FieldError::invalid(
            &path.child("shareProcessNamespace"),
            true,
            "ShareProcessNamespace and HostPID cannot both be enabled",
        ));
    }
    errs.extend(validate_sysctls(sc, spec, &path.child("sysctls")));
    if let Some(p) = sc.opt_str("fsGroupChangePolicy")
        && p != "Always"
        && p != "OnRootMismatch"
    {
        errs.push(FieldError::not_supported(
            &path.child("fsGroupChangePolicy"),
            p,
            &["Always", "OnRootMismatch"],
        ));
    }
    errs.extend(validate_seccomp_profile(
        field(sc, "seccompProfile"),
        &path.child("seccompProfile"),
    ));
    errs.extend(validate_windows_options(
        field(sc, "windowsOptions"),
        &path.child("windowsOptions"),
    ));
    errs.extend(validate_apparmor_profile(
        field(sc, "appArmorProfile"),
        &path.child("appArmorProfile"),
    ));
    if let Some(p) = sc.opt_str("supplementalGroupsPolicy")
        && p != "Merge"
        && p != "Strict"
    {
        errs.push(FieldError::not_supported(
            &path.child("supplementalGroupsPolicy"),
            p,
            &["Merge", "Strict"],
        ));
    }
    if let Some(p) = sc.opt_str("seLinuxChangePolicy")
        && p != "MountOption"
        && p != "Recursive"
    {
        errs.push(FieldError::not_supported(
            &path.child("seLinuxChangePolicy"),
            p,
            &["MountOption", "Recursive"],
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn container_contexts() {
        let p = Path::new("sc");
        assert!(
            validate_security_context(
                &json!({"runAsUser": 1000, "allowPrivilegeEscalation": false}),
                true,
                &p
            )
            .is_empty()
        );
        let errs =
            validate_security_context(&json!({"runAsUser": -1, "procMount": "Unmasked"}), true, &p);
        assert_eq!(
            errs[0].to_string(),
            "sc.runAsUser: Invalid value: -1: must be between 0 and 4294967295, inclusive"
        );
        assert_eq!(
            errs[1].to_string(),
            r#"sc.procMount: Invalid value: "Unmasked": `hostUsers` must be false to use `Unmasked`"#
        );
        let errs =
            validate_security_context(&json!({"seccompProfile": {"type": "Localhost"}}), true, &p);
        assert_eq!(
            errs[0].to_string(),
            "sc.seccompProfile.localhostProfile: Required value: must be set when seccomp type is Localhost"
        );
    }

    #[test]
    fn sysctls() {
        let spec = json!({"hostNetwork": true});
        let sc = json!({"sysctls": [{"name": "net.core.somaxconn", "value": "1"}, {"name": "Bad!"}, {"name": "kernel.shm_rmid_forced"}]});
        let errs = validate_pod_security_context(&sc, &spec, &Path::new("spec"));
        assert_eq!(errs.len(), 2);
        assert_eq!(
            errs[0].to_string(),
            r#"spec.securityContext.sysctls[0].name: Invalid value: "net.core.somaxconn": may not be specified when 'hostNetwork' is true"#
        );
        assert!(
            errs[1]
                .detail
                .starts_with("must have at most 253 characters and match regex")
        );
    }
}
