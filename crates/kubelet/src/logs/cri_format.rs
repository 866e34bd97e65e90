//! One line of a container log file in the CRI format, as containerd writes it:
//! `<RFC3339Nano timestamp> <stream> <tag> <content>`, the tag `F` for a full line and
//! `P` for a partial one (a long line split, or output without a trailing newline).

use jiff::Timestamp;

/// The stream a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// One parsed log line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine<'a> {
    pub timestamp: Timestamp,
    pub stream: Stream,
    /// A partial line: its content is followed by the next line's, without a newline.
    pub partial: bool,
    /// The content, without the newline.
    pub content: &'a [u8],
}

/// Parses one line (without its trailing newline), with kubelet's messages.
pub fn parse(line: &[u8]) -> Result<LogLine<'_>, String> {
    let mut fields = line.splitn(4, |b| *b == b' ');
    let timestamp = fields
        .next()
        .and_then(|t| std::str::from_utf8(t).ok())
        .filter(|t| !t.is_empty())
        .ok_or_else(|| format!("timestamp is not found in log {:?}", lossy(line)))?;
    let timestamp: Timestamp = timestamp
        .parse()
        .map_err(|e| format!("unexpected timestamp format {timestamp:?}: {e}"))?;
    let stream = match fields.next() {
        Some(b"stdout") => Stream::Stdout,
        Some(b"stderr") => Stream::Stderr,
        Some(other) => return Err(format!("unexpected stream type {:?}", lossy(other))),
        None => return Err(format!("stream type is not found in log {:?}", lossy(line))),
    };
    let tag = fields
        .next()
        .ok_or_else(|| format!("log tag is not found in log {:?}", lossy(line)))?;
    // The tag may carry more flags after `:`; the first is P or F.
    let partial = tag.split(|b| *b == b':').next() == Some(b"P");
    Ok(LogLine {
        timestamp,
        stream,
        partial,
        content: fields.next().unwrap_or_default(),
    })
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The timestamp as kubelet prints it with `timestamps=true`: Go's RFC3339Nano, trailing
/// zeros of the fraction dropped.
pub fn format_timestamp(timestamp: Timestamp) -> String {
    timestamp.to_string()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn parses_full_and_partial_lines() {
        let line = parse(b"2016-10-06T00:17:09.669794202Z stdout F log content 1").unwrap();
        assert_eq!(line.stream, Stream::Stdout);
        assert!(!line.partial);
        assert_eq!(line.content, b"log content 1");
        assert_eq!(
            format_timestamp(line.timestamp),
            "2016-10-06T00:17:09.669794202Z"
        );
        let line = parse(b"2016-10-06T00:17:10.1Z stderr P part").unwrap();
        assert_eq!(line.stream, Stream::Stderr);
        assert!(line.partial);
        assert_eq!(format_timestamp(line.timestamp), "2016-10-06T00:17:10.1Z");
        let empty = parse(b"2016-10-06T00:17:10Z stdout F").unwrap();
        assert_eq!(empty.content, b"");
        assert_eq!(format_timestamp(empty.timestamp), "2016-10-06T00:17:10Z");
    }

    #[test]
    fn refuses_malformed_lines() {
        assert!(parse(b"").unwrap_err().contains("timestamp is not found"));
        assert!(parse(b"yesterday stdout F x").is_err());
        assert!(
            parse(b"2016-10-06T00:17:10Z stdin F x")
                .unwrap_err()
                .contains("unexpected stream type")
        );
        assert!(
            parse(b"2016-10-06T00:17:10Z stdout")
                .unwrap_err()
                .contains("log tag")
        );
    }
}
