//! A backend's response body relayed to the client as it arrives: frame by frame, never
//! collected, cut at a byte limit if there is one (`limitBytes`); the backend connection
//! is dropped as soon as the client goes away.

use crate::response;
use bytes::Bytes;
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use tokio::sync::mpsc;

/// The response body relaying `body`, at most `limit` bytes of it.
pub fn relay(mut body: Incoming, limit: Option<u64>) -> response::Body {
    let (sender, receiver) = mpsc::channel::<Bytes>(16);
    tokio::spawn(async move {
        let mut remaining = limit;
        loop {
            let frame = tokio::select! {
                frame = body.frame() => frame,
                () = sender.closed() => return,
            };
            let mut data = match frame {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => data,
                    Err(_) => continue, // trailers
                },
                Some(Err(error)) => {
                    tracing::debug!(%error, "the backend's response body failed");
                    return;
                }
                None => return,
            };
            if let Some(left) = remaining.as_mut() {
                let take = usize::try_from(*left).unwrap_or(usize::MAX).min(data.len());
                data.truncate(take);
                *left -= take as u64;
            }
            if !data.is_empty() && sender.send(data).await.is_err() {
                return;
            }
            if remaining == Some(0) {
                return;
            }
        }
    });
    response::Body::Stream(receiver)
}
