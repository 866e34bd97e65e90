//! Kubernetes' rules about pods and nodes that more than one component applies, in the
//! spirit of `k8s.io/component-helpers`: one implementation of each, so that the scheduler,
//! the controllers, the API server and the node's components (kubelet, proxy) agree.
//!
//! - [`label_selector`]: typed `LabelSelector`s as label selectors.
//! - [`tolerations`]: whether a toleration tolerates a taint (`ToleratesTaint`).
//! - [`nodeaffinity`]: node selector terms and requirements (`In`, `NotIn`, `Exists`,
//!   `DoesNotExist`, `Gt`, `Lt`; `metadata.name` fields), preferred terms, and a pod's
//!   required node affinity with its `nodeSelector` (`GetRequiredNodeAffinity`).
//! - [`pod_readiness`]: a pod's phase, Ready condition and availability after
//!   `minReadySeconds`.
//! - [`qos`]: a pod's QoS class (`BestEffort`, `Burstable`, `Guaranteed`).
//! - [`resource`]: a pod's effective requests (`PodRequests`: containers and sidecars, or
//!   the largest init container, plus overhead).
//!
//! Entry points take k8s-openapi types; where callers hold objects as JSON, a JSON entry
//! point reads them with `kyb_apimachinery::json`. Components must use these rather than
//! copy them: where copies had drifted, Kubernetes' behaviour was chosen here (each module
//! says which).

pub mod label_selector;
pub mod nodeaffinity;
pub mod pod_readiness;
pub mod qos;
pub mod resource;
pub mod tolerations;
