//! Small helpers: timestamps, UIDs, generated names.

/// Now, as Kubernetes writes `metav1.Time`: RFC 3339 at second precision.
pub fn now() -> String {
    timestamp(jiff::Timestamp::now())
}

pub fn timestamp(t: jiff::Timestamp) -> String {
    jiff::Timestamp::from_second(t.as_second())
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
        .to_string()
}

/// The current Unix time in seconds.
pub fn unix_now() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// A `metav1.Time` as Unix seconds.
pub fn parse_timestamp(text: &str) -> Option<i64> {
    text.parse::<jiff::Timestamp>().ok().map(|t| t.as_second())
}

/// Unix seconds as a `metav1.Time`.
pub fn timestamp_of(seconds: i64) -> String {
    jiff::Timestamp::from_second(seconds)
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
        .to_string()
}

/// A random (version 4) UUID.
pub fn new_uid() -> String {
    let mut bytes: [u8; 16] = std::array::from_fn(|_| fastrand::u8(..));
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// `generateName` plus five random characters from Kubernetes' alphabet (no vowels, no
/// look-alikes), trimmed so the result stays within 63 characters.
pub fn generate_name(base: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    const MAX_BASE: usize = 63 - 5;
    let base = if base.len() > MAX_BASE {
        let mut end = MAX_BASE;
        while !base.is_char_boundary(end) {
            end -= 1;
        }
        &base[..end]
    } else {
        base
    };
    let suffix: String = (0..5)
        .map(|_| char::from(ALPHABET[fastrand::usize(..ALPHABET.len())]))
        .collect();
    format!("{base}{suffix}")
}

/// Runs futures concurrently on the current task and returns their outputs in order.
pub async fn join_all<F: std::future::Future>(
    futures: impl IntoIterator<Item = F>,
) -> Vec<F::Output> {
    let mut pending: Vec<std::pin::Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = (0..pending.len()).map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut all_done = true;
        for (i, future) in pending.iter_mut().enumerate() {
            if outputs[i].is_some() {
                continue;
            }
            match future.as_mut().poll(cx) {
                std::task::Poll::Ready(output) => outputs[i] = Some(output),
                std::task::Poll::Pending => all_done = false,
            }
        }
        if all_done {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    outputs.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        let uid = new_uid();
        assert_eq!(uid.len(), 36);
        assert_eq!(&uid[14..15], "4");
        let name = generate_name("web-");
        assert!(name.starts_with("web-") && name.len() == 9);
        assert!(generate_name(&"x".repeat(80)).len() <= 63);
        assert!(now().ends_with('Z') && !now().contains('.'));
    }
}
