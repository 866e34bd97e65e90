//! Key-range arithmetic shared by the backends.

/// The smallest key greater than every key that starts with `prefix` (etcd's range end for
/// a prefix), or `None` when no such key exists (empty prefix, or all bytes `0xff`).
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// Checks that `start` (if any) lies under `prefix` and returns where a range read begins.
pub(crate) fn range_start<'a>(
    prefix: &'a [u8],
    start: Option<&'a [u8]>,
) -> crate::Result<&'a [u8]> {
    match start {
        None => Ok(prefix),
        Some(start) if start.starts_with(prefix) => Ok(start),
        Some(_) => Err(crate::Error::InvalidArgument(
            "the start key of a list must lie under its prefix".into(),
        )),
    }
}

pub(crate) fn check_key(key: &[u8]) -> crate::Result<()> {
    if key.is_empty() {
        return Err(crate::Error::InvalidArgument("empty key".into()));
    }
    Ok(())
}

pub(crate) fn check_value(value: &[u8]) -> crate::Result<()> {
    if value.len() > crate::MAX_VALUE_SIZE {
        return Err(crate::Error::ValueTooLarge {
            size: value.len(),
            limit: crate::MAX_VALUE_SIZE,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_end_increments_the_last_byte_that_can_be() {
        assert_eq!(
            prefix_end(b"/registry/pods/"),
            Some(b"/registry/pods0".to_vec())
        );
        assert_eq!(prefix_end(b"a\xff\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_end(b"\xff\xff"), None);
        assert_eq!(prefix_end(b""), None);
    }

    #[test]
    fn start_must_lie_under_the_prefix() {
        assert_eq!(range_start(b"/a/", None).ok(), Some(&b"/a/"[..]));
        assert_eq!(range_start(b"/a/", Some(b"/a/x")).ok(), Some(&b"/a/x"[..]));
        assert!(range_start(b"/a/", Some(b"/b/x")).is_err());
    }
}
