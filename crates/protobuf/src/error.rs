//! Decoding and encoding errors, each saying what was wrong and where.

use std::fmt;

use crate::wire::WireError;

/// Why a protobuf body could not be turned into JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// The body does not start with the `k8s\0` magic of Kubernetes' protobuf envelope.
    NotProtobuf,
    /// The envelope names a type that is not served.
    UnknownKind {
        /// The envelope's apiVersion ("apps/v1").
        api_version: String,
        /// The envelope's kind.
        kind: String,
    },
    /// The envelope's object is not plain protobuf (a content encoding such as gzip, or
    /// a content type other than protobuf).
    UnsupportedEncoding {
        /// runtime.Unknown's contentEncoding.
        content_encoding: String,
        /// runtime.Unknown's contentType.
        content_type: String,
    },
    /// The bytes do not follow the wire format of the type they should hold.
    Malformed {
        /// The message type being decoded, e.g. "io.k8s.api.core.v1.PodSpec".
        type_name: &'static str,
        /// The field being decoded: its number and JSON name.
        field: Option<(u32, &'static str)>,
        /// Where in the object, as a JSON path ("spec.containers[0].ports").
        path: String,
        /// What was wrong.
        problem: Problem,
    },
    /// Messages nested deeper than the decoder allows.
    TooDeep {
        /// The nesting limit.
        limit: usize,
    },
}

/// What was wrong with a malformed field.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Problem {
    /// The data ends inside a value.
    Truncated,
    /// A varint longer than 64 bits.
    VarintOverflow,
    /// A length-delimited value longer than the data left.
    LengthOutOfRange,
    /// A field number 0 or a wire type protobuf does not define (or groups).
    InvalidTag,
    /// The field arrived with a wire type that does not fit its type.
    WrongWireType {
        /// The wire type found.
        found: u8,
        /// The field's type ("string", "int32", "message", ...).
        expected: &'static str,
    },
    /// An embedded JSON document (RawExtension, FieldsV1, JSON) is not valid JSON.
    InvalidJson(String),
    /// A time outside the years 0000 to 9999.
    TimeOutOfRange,
    /// An IntOrString with a type other than 0 (int) or 1 (string).
    InvalidIntOrString(i64),
    /// A double that JSON cannot represent (NaN or infinite).
    NonFiniteNumber,
}

impl From<WireError> for Problem {
    fn from(e: WireError) -> Self {
        match e {
            WireError::Truncated => Problem::Truncated,
            WireError::VarintOverflow => Problem::VarintOverflow,
            WireError::LengthOutOfRange => Problem::LengthOutOfRange,
            WireError::InvalidTag => Problem::InvalidTag,
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Truncated => f.write_str("data ends inside a value"),
            Problem::VarintOverflow => f.write_str("varint longer than 64 bits"),
            Problem::LengthOutOfRange => f.write_str("length runs past the end of the data"),
            Problem::InvalidTag => f.write_str("invalid field number or wire type"),
            Problem::WrongWireType { found, expected } => {
                write!(f, "wire type {found} cannot hold a {expected}")
            }
            Problem::InvalidJson(e) => write!(f, "embedded JSON is invalid: {e}"),
            Problem::TimeOutOfRange => f.write_str("time outside the years 0000 to 9999"),
            Problem::InvalidIntOrString(t) => write!(f, "IntOrString has invalid type {t}"),
            Problem::NonFiniteNumber => f.write_str("number is NaN or infinite"),
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::NotProtobuf => {
                f.write_str("not a Kubernetes protobuf body (missing the k8s\\0 prefix)")
            }
            DecodeError::UnknownKind { api_version, kind } => {
                let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
                write!(f, "unknown kind \"{group}/{version}, Kind={kind}\"")
            }
            DecodeError::UnsupportedEncoding {
                content_encoding,
                content_type,
            } => write!(
                f,
                "unsupported embedded object encoding (contentEncoding {content_encoding:?}, \
                 contentType {content_type:?})"
            ),
            DecodeError::Malformed {
                type_name,
                field,
                path,
                problem,
            } => {
                f.write_str("malformed protobuf: ")?;
                if let Some((number, json)) = field {
                    write!(f, "field {number}")?;
                    if !json.is_empty() {
                        write!(f, " ({json})")?;
                    }
                    f.write_str(" of ")?;
                }
                write!(f, "type {type_name}")?;
                if !path.is_empty() {
                    write!(f, " at {path}")?;
                }
                write!(f, ": {problem}")
            }
            DecodeError::TooDeep { limit } => {
                write!(f, "objects nested more than {limit} levels deep")
            }
        }
    }
}

impl std::error::Error for DecodeError {}

/// Why a JSON object could not be turned into protobuf.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EncodeError {
    /// The object has no string "apiVersion" or "kind".
    MissingTypeMeta,
    /// The object's type is not served.
    UnknownKind {
        /// The object's apiVersion.
        api_version: String,
        /// The object's kind.
        kind: String,
    },
    /// A value does not have the JSON type its field needs.
    InvalidValue {
        /// Where in the object, as a JSON path.
        path: String,
        /// What the field needs ("string", "int32", "RFC 3339 time", ...).
        expected: &'static str,
    },
    /// Objects nested deeper than the encoder allows.
    TooDeep {
        /// The nesting limit.
        limit: usize,
    },
    /// A watch event larger than a frame's 32-bit length can say.
    TooLarge,
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::MissingTypeMeta => f.write_str("object has no apiVersion and kind"),
            EncodeError::UnknownKind { api_version, kind } => {
                let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
                write!(f, "unknown kind \"{group}/{version}, Kind={kind}\"")
            }
            EncodeError::InvalidValue { path, expected } if path.is_empty() => {
                write!(f, "invalid value: expected {expected}")
            }
            EncodeError::InvalidValue { path, expected } => {
                write!(f, "invalid value at {path}: expected {expected}")
            }
            EncodeError::TooDeep { limit } => {
                write!(f, "objects nested more than {limit} levels deep")
            }
            EncodeError::TooLarge => f.write_str("watch event larger than 4 GiB"),
        }
    }
}

impl std::error::Error for EncodeError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_problem() {
        let e = DecodeError::UnknownKind {
            api_version: "apps/v1".into(),
            kind: "Widget".into(),
        };
        assert_eq!(e.to_string(), "unknown kind \"apps/v1, Kind=Widget\"");
        let e = DecodeError::UnknownKind {
            api_version: "v1".into(),
            kind: "Widget".into(),
        };
        assert_eq!(e.to_string(), "unknown kind \"/v1, Kind=Widget\"");
        let e = DecodeError::Malformed {
            type_name: "io.k8s.api.core.v1.PodStatus",
            field: Some((12, "podIP")),
            path: "status.podIP".into(),
            problem: Problem::WrongWireType {
                found: 0,
                expected: "string",
            },
        };
        assert_eq!(
            e.to_string(),
            "malformed protobuf: field 12 (podIP) of type io.k8s.api.core.v1.PodStatus at \
             status.podIP: wire type 0 cannot hold a string"
        );
        let e = EncodeError::InvalidValue {
            path: "spec.replicas".into(),
            expected: "int32",
        };
        assert_eq!(
            e.to_string(),
            "invalid value at spec.replicas: expected int32"
        );
    }
}
