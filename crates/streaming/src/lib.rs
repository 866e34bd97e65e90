//! The streaming protocols behind `kubectl exec`, `attach`, `cp` and `port-forward`, with
//! no API-server knowledge:
//!
//! - [`spdy`]: SPDY/3.1 framing and sessions (client and server);
//! - [`remotecommand`]: Kubernetes' remotecommand protocol (v4) over SPDY — the streams of
//!   an exec or attach, and the final `Status` with the exit code;
//! - [`channel`]: the WebSocket channel protocols `v5.channel.k8s.io` and
//!   `v4.channel.k8s.io` (a channel byte before each message) and the WebSocket upgrade;
//! - [`translator`]: kube-apiserver's StreamTranslator — a client's WebSocket exec run
//!   against a backend's SPDY;
//! - [`tunnel`]: the port-forward WebSocket tunnel, SPDY carried in binary messages.

pub mod channel;
pub mod remotecommand;
pub mod spdy;
pub mod translator;
pub mod tunnel;
