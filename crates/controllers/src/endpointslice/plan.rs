//! Which EndpointSlices to create, update and delete so a Service's slices hold exactly
//! its desired endpoints, with as few writes as possible, as Kubernetes' EndpointSlice
//! reconciler does:
//!
//! 1. Endpoints stay in the slice they are in (updated in place when they changed);
//!    endpoints no longer wanted are removed; a slice left empty, or of a port set or
//!    address type no longer wanted, is to be deleted.
//! 2. New endpoints first fill slices already being updated.
//! 3. The rest go into new slices of at most `max` endpoints — reusing slices to be
//!    deleted instead of creating new ones — except that a last, partial batch goes into
//!    the fullest unchanged slice it fits in, if any.
//! 4. A Service with no endpoints at all keeps one empty "placeholder" slice (no ports).
//!
//! Slices are grouped by address type and port set: pods whose Service ports resolve to
//! the same ports share slices.

use k8s_openapi::api::discovery::v1::{Endpoint, EndpointPort, EndpointSlice};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The endpoints wanted for one address type and port set.
#[derive(Clone, Debug, Default)]
pub struct Group {
    pub address_type: String,
    pub ports: Option<Vec<EndpointPort>>,
    /// By endpoint key ([`endpoint_key`]).
    pub endpoints: BTreeMap<String, Endpoint>,
}

/// A slice's content: what to write.
#[derive(Clone, Debug, PartialEq)]
pub struct Content {
    pub address_type: String,
    pub ports: Option<Vec<EndpointPort>>,
    pub endpoints: Vec<Endpoint>,
}

/// The writes that bring the slices to the desired state.
#[derive(Debug, Default)]
pub struct Plan {
    pub create: Vec<Content>,
    /// Existing slices (by name) and their new content.
    pub update: Vec<(Arc<EndpointSlice>, Content)>,
    pub delete: Vec<Arc<EndpointSlice>>,
}

/// What identifies an endpoint across updates: its addresses.
pub fn endpoint_key(endpoint: &Endpoint) -> String {
    endpoint.addresses.join(",")
}

/// The group key of an address type and port set (no ports and an empty list are the
/// same: the API does not keep an empty list).
pub fn group_key(address_type: &str, ports: Option<&[EndpointPort]>) -> String {
    let mut parts: Vec<String> = ports
        .unwrap_or_default()
        .iter()
        .map(|p| {
            format!(
                "{}/{}/{}/{}",
                p.name.as_deref().unwrap_or_default(),
                p.protocol.as_deref().unwrap_or("TCP"),
                p.port.unwrap_or_default(),
                p.app_protocol.as_deref().unwrap_or_default()
            )
        })
        .collect();
    parts.sort();
    format!("{address_type}|{}", parts.join(";"))
}

fn slice_key(slice: &EndpointSlice) -> String {
    group_key(&slice.address_type, slice.ports.as_deref())
}

fn is_placeholder(slice: &EndpointSlice) -> bool {
    slice.ports.as_ref().is_none_or(Vec::is_empty) && slice.endpoints.is_empty()
}

/// Plans the writes for `existing` slices to hold `desired` (keyed by [`group_key`]),
/// at most `max` endpoints per slice. `primary` is the address type of the placeholder.
pub fn plan(
    existing: &[Arc<EndpointSlice>],
    mut desired: BTreeMap<String, Group>,
    max: usize,
    primary: &str,
) -> Plan {
    let max = max.max(1);
    let mut plan = Plan::default();
    let mut to_delete: Vec<Arc<EndpointSlice>> = vec![];
    // Slices of each group left as they are, with their endpoint counts.
    let mut unchanged: BTreeMap<String, Vec<(Arc<EndpointSlice>, usize)>> = BTreeMap::new();
    let total_desired: usize = desired.values().map(|g| g.endpoints.len()).sum();

    // 1. Keep endpoints where they are.
    for slice in existing {
        let key = slice_key(slice);
        let Some(group) = desired.get_mut(&key) else {
            to_delete.push(slice.clone());
            continue;
        };
        let mut changed = false;
        let mut kept = vec![];
        for endpoint in &slice.endpoints {
            match group.endpoints.remove(&endpoint_key(endpoint)) {
                Some(wanted) => {
                    changed |= wanted != *endpoint;
                    kept.push(wanted);
                }
                None => changed = true,
            }
        }
        if kept.is_empty() {
            to_delete.push(slice.clone());
        } else if changed {
            plan.update.push((
                slice.clone(),
                Content {
                    address_type: slice.address_type.clone(),
                    ports: group.ports.clone(),
                    endpoints: kept,
                },
            ));
        } else {
            unchanged
                .entry(key)
                .or_default()
                .push((slice.clone(), slice.endpoints.len()));
        }
    }

    for (key, group) in desired.iter_mut() {
        let mut remaining: Vec<Endpoint> =
            std::mem::take(&mut group.endpoints).into_values().collect();
        // 2. Fill slices already being updated.
        for (_, content) in plan.update.iter_mut() {
            if remaining.is_empty() {
                break;
            }
            if group_key(&content.address_type, content.ports.as_deref()) != *key {
                continue;
            }
            let room = max.saturating_sub(content.endpoints.len());
            let take = room.min(remaining.len());
            content.endpoints.extend(remaining.drain(..take));
        }
        // 3. Full batches into new (or recycled) slices; a partial last batch into the
        // fullest unchanged slice with room, else a new one.
        while !remaining.is_empty() {
            let take = max.min(remaining.len());
            let batch: Vec<Endpoint> = remaining.drain(..take).collect();
            if batch.len() < max
                && let Some(slices) = unchanged.get_mut(key)
                && let Some(index) = slices
                    .iter()
                    .enumerate()
                    .filter(|(_, (_, count))| count + batch.len() <= max)
                    .max_by_key(|(_, (_, count))| *count)
                    .map(|(i, _)| i)
            {
                let (slice, _) = slices.remove(index);
                let mut endpoints = slice.endpoints.clone();
                endpoints.extend(batch);
                plan.update.push((
                    slice,
                    Content {
                        address_type: group.address_type.clone(),
                        ports: group.ports.clone(),
                        endpoints,
                    },
                ));
                continue;
            }
            let content = Content {
                address_type: group.address_type.clone(),
                ports: group.ports.clone(),
                endpoints: batch,
            };
            match to_delete.pop() {
                Some(recycled) => plan.update.push((recycled, content)),
                None => plan.create.push(content),
            }
        }
    }

    // 4. The placeholder when there is nothing else.
    let kept_any = !plan.update.is_empty()
        || !plan.create.is_empty()
        || unchanged.values().any(|v| !v.is_empty());
    if total_desired == 0 && !kept_any {
        let placeholder = Content {
            address_type: primary.to_string(),
            ports: None,
            endpoints: vec![],
        };
        match to_delete
            .iter()
            .position(|s| is_placeholder(s) && s.address_type == primary)
        {
            Some(index) => {
                to_delete.remove(index);
            }
            None => match to_delete.pop() {
                Some(recycled) => plan.update.push((recycled, placeholder)),
                None => plan.create.push(placeholder),
            },
        }
    }
    plan.delete = to_delete;
    plan
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn ep(ip: &str, ready: bool) -> Endpoint {
        Endpoint {
            addresses: vec![ip.to_string()],
            conditions: Some(k8s_openapi::api::discovery::v1::EndpointConditions {
                ready: Some(ready),
                serving: Some(ready),
                terminating: Some(false),
            }),
            ..Endpoint::default()
        }
    }

    fn ports() -> Vec<EndpointPort> {
        vec![EndpointPort {
            name: Some(String::new()),
            port: Some(80),
            protocol: Some("TCP".into()),
            app_protocol: None,
        }]
    }

    fn group(ips: impl IntoIterator<Item = String>) -> BTreeMap<String, Group> {
        let endpoints = ips
            .into_iter()
            .map(|ip| (ip.clone(), ep(&ip, true)))
            .collect();
        let g = Group {
            address_type: "IPv4".into(),
            ports: Some(ports()),
            endpoints,
        };
        BTreeMap::from([(group_key("IPv4", Some(&ports())), g)])
    }

    fn slice(name: &str, ips: &[String]) -> Arc<EndpointSlice> {
        Arc::new(EndpointSlice {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            address_type: "IPv4".into(),
            endpoints: ips.iter().map(|ip| ep(ip, true)).collect(),
            ports: Some(ports()),
        })
    }

    fn ips(range: std::ops::Range<u32>) -> Vec<String> {
        range
            .map(|i| format!("10.0.{}.{}", i / 250, i % 250))
            .collect()
    }

    #[test]
    fn new_endpoints_are_split_at_the_maximum() {
        let p = plan(&[], group(ips(0..150)), 100, "IPv4");
        assert_eq!(p.create.len(), 2);
        assert_eq!(p.create[0].endpoints.len(), 100);
        assert_eq!(p.create[1].endpoints.len(), 50);
        assert!(p.update.is_empty() && p.delete.is_empty());
    }

    #[test]
    fn nothing_changes_when_nothing_changed() {
        let all = ips(0..150);
        let existing = [slice("a", &all[..100]), slice("b", &all[100..])];
        let p = plan(&existing, group(all.clone()), 100, "IPv4");
        assert!(p.create.is_empty() && p.update.is_empty() && p.delete.is_empty());
    }

    #[test]
    fn changes_stay_in_their_slice_and_new_ones_fill_it() {
        let all = ips(0..150);
        let existing = [slice("a", &all[..100]), slice("b", &all[100..])];
        // One endpoint of b goes away, one of a turns not ready, two are new.
        let mut desired = group(all[..149].iter().cloned().chain(ips(200..202)));
        let g = desired.values_mut().next().unwrap();
        g.endpoints.insert(all[3].clone(), ep(&all[3], false));
        let p = plan(&existing, desired, 100, "IPv4");
        assert!(p.create.is_empty() && p.delete.is_empty());
        let names: Vec<_> = p
            .update
            .iter()
            .map(|(s, c)| (s.metadata.name.clone().unwrap(), c.endpoints.len()))
            .collect();
        // a is updated (full, so nothing added); b lost one and takes the two new ones.
        assert_eq!(names, [("a".to_string(), 100), ("b".to_string(), 51)]);
    }

    #[test]
    fn a_partial_batch_goes_into_an_unchanged_slice_with_room() {
        let all = ips(0..60);
        let existing = [slice("a", &all)];
        let p = plan(&existing, group(ips(0..70)), 100, "IPv4");
        assert!(p.create.is_empty());
        assert_eq!(p.update.len(), 1);
        assert_eq!(p.update[0].1.endpoints.len(), 70);
    }

    #[test]
    fn emptied_slices_are_recycled_or_deleted_and_a_placeholder_stays() {
        let existing = [slice("a", &ips(0..10))];
        // Other endpoints only: the slice is reused instead of a create and a delete.
        let p = plan(&existing, group(ips(20..25)), 100, "IPv4");
        assert!(p.create.is_empty() && p.delete.is_empty());
        assert_eq!(p.update.len(), 1);
        // No endpoints at all: the slice becomes the placeholder.
        let p = plan(&existing, BTreeMap::new(), 100, "IPv4");
        assert_eq!(p.update.len(), 1);
        assert_eq!(p.update[0].1.ports, None);
        assert!(p.update[0].1.endpoints.is_empty());
        // A placeholder is kept as it is; nothing to create.
        let mut placeholder = (*slice("p", &[])).clone();
        placeholder.ports = None;
        let p = plan(&[Arc::new(placeholder)], BTreeMap::new(), 100, "IPv4");
        assert!(p.create.is_empty() && p.update.is_empty() && p.delete.is_empty());
        // No slices, no endpoints: a placeholder is created.
        let p = plan(&[], BTreeMap::new(), 100, "IPv4");
        assert_eq!(p.create.len(), 1);
    }
}
