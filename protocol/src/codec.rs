//! Payload codecs: bincode 2 (serde) for Rust peers, JSON for everyone else. Both encode the same
//! serde model; see [`crate::wire_enum`] for how enums take a shape fit for each.

use serde::{Serialize, de::DeserializeOwned};

/// How frame payloads are encoded after the handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    /// bincode 2.0 with its standard configuration (varint integers, little endian).
    Bincode,
    /// UTF-8 JSON, one value per frame.
    Json,
}

impl Encoding {
    /// The name used on the wire and in the docs.
    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::Bincode => "bincode",
            Encoding::Json => "json",
        }
    }
}

impl std::fmt::Display for Encoding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a payload could not be encoded or decoded.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    /// The JSON text did not parse, or did not fit the expected message.
    #[error("invalid JSON {what}: {source}")]
    Json {
        /// The message type expected.
        what: &'static str,
        /// The parser's account, with line and column.
        #[source]
        source: serde_json::Error,
    },
    /// The bincode bytes did not decode as the expected message.
    #[error("invalid bincode {what}: {source}")]
    BincodeDecode {
        /// The message type expected.
        what: &'static str,
        /// The decoder's account.
        #[source]
        source: bincode::error::DecodeError,
    },
    /// A value could not be bincode-encoded (for example a path that is not UTF-8).
    #[error("cannot bincode-encode {what}: {source}")]
    BincodeEncode {
        /// The message type.
        what: &'static str,
        /// The encoder's account.
        #[source]
        source: bincode::error::EncodeError,
    },
    /// A bincode payload decoded, but bytes were left over: it was not one message.
    #[error("invalid bincode {what}: {extra} trailing bytes after the message")]
    TrailingBytes {
        /// The message type expected.
        what: &'static str,
        /// How many bytes were left.
        extra: usize,
    },
}

/// bincode never claims more than this while decoding, whatever a length prefix inside says.
const BINCODE_LIMIT: usize = 64 * 1024 * 1024;

fn bincode_config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<BINCODE_LIMIT>()
}

/// The short type name used in error messages (`Request`, not `protocol::control::Request`).
fn short_name<T>() -> &'static str {
    let full = std::any::type_name::<T>();
    full.rsplit("::").next().unwrap_or(full)
}

/// Encodes `value` as one payload.
pub fn encode<T: Serialize>(encoding: Encoding, value: &T) -> Result<Vec<u8>, CodecError> {
    match encoding {
        Encoding::Json => serde_json::to_vec(value).map_err(|source| CodecError::Json {
            what: short_name::<T>(),
            source,
        }),
        Encoding::Bincode => {
            bincode::serde::encode_to_vec(value, bincode_config()).map_err(|source| {
                CodecError::BincodeEncode {
                    what: short_name::<T>(),
                    source,
                }
            })
        }
    }
}

/// Decodes one payload as a `T`. The whole payload must be one value.
pub fn decode<T: DeserializeOwned>(encoding: Encoding, payload: &[u8]) -> Result<T, CodecError> {
    match encoding {
        Encoding::Json => serde_json::from_slice(payload).map_err(|source| CodecError::Json {
            what: short_name::<T>(),
            source,
        }),
        Encoding::Bincode => {
            let (value, used) = bincode::serde::decode_from_slice(payload, bincode_config())
                .map_err(|source| CodecError::BincodeDecode {
                    what: short_name::<T>(),
                    source,
                })?;
            match payload.len() - used {
                0 => Ok(value),
                extra => Err(CodecError::TrailingBytes {
                    what: short_name::<T>(),
                    extra,
                }),
            }
        }
    }
}
