//! How an atom's value becomes bytes and back: the [`Codec`] trait, [`Json`] (the default) and
//! [`Postcard`] (compact binary).
//!
//! A codec never panics on foreign bytes: anything that does not decode (another program wrote
//! the node, or a different codec did) is a [`CodecError`], which the atom reports with the
//! node's path.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// Bytes that could not be produced from a value, or a value that could not be read from bytes.
///
/// ```
/// use avout::atom::{Codec, Json};
/// let err = Json.decode::<u64>(b"\xff\xfe").unwrap_err();
/// assert_eq!(err.codec, "json");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[error("{codec}: {message}")]
pub struct CodecError {
    /// The codec's name ([`Codec::NAME`]).
    pub codec: &'static str,
    /// What went wrong, in the codec's words.
    pub message: String,
}

/// Turns values into bytes and back.
///
/// Implementations MUST be deterministic (equal values give equal bytes is not required, but
/// decoding what `encode` produced MUST give an equal value) and MUST NOT panic on any input.
///
/// ```
/// use avout::atom::{Codec, Json, Postcard};
/// let v = vec![1u32, 2, 3];
/// assert_eq!(Json.decode::<Vec<u32>>(&Json.encode(&v).unwrap()).unwrap(), v);
/// assert_eq!(Postcard.decode::<Vec<u32>>(&Postcard.encode(&v).unwrap()).unwrap(), v);
/// ```
pub trait Codec: Clone + Send + Sync + 'static {
    /// A short name for error messages.
    const NAME: &'static str;

    /// The bytes of `value`.
    ///
    /// ```
    /// use avout::atom::{Codec, Json};
    /// assert_eq!(Json.encode(&[1, 2]).unwrap(), b"[1,2]");
    /// ```
    fn encode<T: Serialize + ?Sized>(&self, value: &T) -> Result<Vec<u8>, CodecError>;

    /// The value in `bytes`; an error (never a panic) if they are not one.
    ///
    /// ```
    /// use avout::atom::{Codec, Json};
    /// assert_eq!(Json.decode::<Vec<u8>>(b"[1,2]").unwrap(), vec![1, 2]);
    /// assert!(Json.decode::<Vec<u8>>(b"[1,").is_err());
    /// ```
    fn decode<T: DeserializeOwned>(&self, bytes: &[u8]) -> Result<T, CodecError>;
}

/// JSON through `serde_json`: readable with `zkCli.sh get`, and shared with programs in any
/// language. The default.
///
/// ```
/// use avout::atom::{Codec, Json};
/// assert_eq!(Json.encode(&serde_json::json!({"a": 1})).unwrap(), br#"{"a":1}"#);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Json;

impl Codec for Json {
    const NAME: &'static str = "json";

    fn encode<T: Serialize + ?Sized>(&self, value: &T) -> Result<Vec<u8>, CodecError> {
        serde_json::to_vec(value).map_err(|e| CodecError {
            codec: Self::NAME,
            message: e.to_string(),
        })
    }

    fn decode<T: DeserializeOwned>(&self, bytes: &[u8]) -> Result<T, CodecError> {
        serde_json::from_slice(bytes).map_err(|e| CodecError {
            codec: Self::NAME,
            message: e.to_string(),
        })
    }
}

/// A compact binary encoding through the `postcard` crate: varint integers, no field names,
/// so a counter is a byte or two instead of its decimal digits plus framing.
///
/// Postcard was chosen over bincode because its wire format is specified and stable since
/// 1.0 and the crate is actively maintained, while bincode's 2.x release changed its format
/// and the project has since been archived. Postcard is not self-describing: types that need
/// `deserialize_any` (`serde_json::Value`, untagged enums) do not round-trip; use [`Json`]
/// for them.
///
/// ```
/// use avout::atom::{Codec, Postcard};
/// assert_eq!(Postcard.encode(&300u64).unwrap(), [0xac, 0x02]);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Postcard;

impl Codec for Postcard {
    const NAME: &'static str = "postcard";

    fn encode<T: Serialize + ?Sized>(&self, value: &T) -> Result<Vec<u8>, CodecError> {
        postcard::to_stdvec(value).map_err(|e| CodecError {
            codec: Self::NAME,
            message: e.to_string(),
        })
    }

    fn decode<T: DeserializeOwned>(&self, bytes: &[u8]) -> Result<T, CodecError> {
        // `from_bytes` accepts trailing bytes; a value followed by garbage is not ours.
        match postcard::take_from_bytes(bytes) {
            Ok((value, [])) => Ok(value),
            Ok((_, rest)) => Err(CodecError {
                codec: Self::NAME,
                message: format!("{} trailing bytes after the value", rest.len()),
            }),
            Err(e) => Err(CodecError {
                codec: Self::NAME,
                message: e.to_string(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn foreign_bytes_are_errors_not_panics() {
        let junk: &[&[u8]] = &[
            b"",
            b"\xff",
            b"{",
            b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80",
        ];
        for bytes in junk {
            assert!(Json.decode::<u64>(bytes).is_err());
            assert!(Postcard.decode::<String>(bytes).is_err());
        }
        assert!(Postcard.decode::<u8>(&[1, 2]).is_err(), "trailing bytes");
    }
}
