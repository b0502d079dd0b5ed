//! `wire_enum!`: one enum, two wire shapes.
//!
//! JSON clients (any language) want internally tagged objects, `{"type": "create_session", ...}`.
//! bincode cannot decode that shape: serde's internally tagged enums need `deserialize_any`, which a
//! non-self-describing format does not have. So every message enum is declared through this macro,
//! which derives nothing itself and instead serialises through one of two private mirror enums,
//! picked by `Serializer::is_human_readable()`:
//!
//! * human-readable (JSON): `#[serde(tag = "type", rename_all = "snake_case")]`;
//! * compact (bincode): serde's default external tagging, i.e. a variant index then the payload.
//!
//! Variants are either unit variants or newtype variants around a struct (internal tagging needs the
//! payload to be a map). The payload must not itself be a `wire_enum!`: both would write a `type`
//! key into the same JSON object. Wrap it in a struct field instead. Serialising borrows; deserialising moves; nothing is cloned.

/// Declares a message enum that is internally tagged in JSON and index-tagged in bincode.
#[macro_export]
#[doc(hidden)]
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident $( ( $payload:ty ) )?
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant $( ($payload) )? ),*
        }

        impl $name {
            /// The Rust names of every variant, in declaration order.
            #[allow(dead_code)]
            pub const VARIANTS: &'static [&'static str] = &[ $( stringify!($variant) ),* ];

            /// The Rust name of this value's variant.
            #[allow(dead_code)]
            pub fn variant_name(&self) -> &'static str {
                match self {
                    $( $name::$variant $( ($crate::wire_enum!(@bind _v $payload)) )? => stringify!($variant) ),*
                }
            }
        }

        const _: () = {
            use ::serde::{Deserialize, Deserializer, Serialize, Serializer};

            #[derive(Serialize)]
            #[serde(tag = "type", rename_all = "snake_case")]
            enum TaggedRef<'a> {
                $( $variant $( (&'a $payload) )? , )*
                #[serde(skip)]
                #[allow(dead_code)]
                __Lifetime(::core::marker::PhantomData<&'a ()>),
            }

            #[derive(Serialize)]
            enum IndexedRef<'a> {
                $( $variant $( (&'a $payload) )? , )*
                #[serde(skip)]
                #[allow(dead_code)]
                __Lifetime(::core::marker::PhantomData<&'a ()>),
            }

            #[derive(Deserialize)]
            #[serde(tag = "type", rename_all = "snake_case")]
            enum TaggedOwned { $( $variant $( ($payload) )? ),* }

            #[derive(Deserialize)]
            enum IndexedOwned { $( $variant $( ($payload) )? ),* }

            impl Serialize for $name {
                fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                    if serializer.is_human_readable() {
                        let mirror = match self {
                            $( $name::$variant $( ($crate::wire_enum!(@bind v $payload)) )?
                                => TaggedRef::$variant $( ($crate::wire_enum!(@bind v $payload)) )? ),*
                        };
                        mirror.serialize(serializer)
                    } else {
                        let mirror = match self {
                            $( $name::$variant $( ($crate::wire_enum!(@bind v $payload)) )?
                                => IndexedRef::$variant $( ($crate::wire_enum!(@bind v $payload)) )? ),*
                        };
                        mirror.serialize(serializer)
                    }
                }
            }

            impl<'de> Deserialize<'de> for $name {
                fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                    if deserializer.is_human_readable() {
                        Ok(match TaggedOwned::deserialize(deserializer)? {
                            $( TaggedOwned::$variant $( ($crate::wire_enum!(@bind v $payload)) )?
                                => $name::$variant $( ($crate::wire_enum!(@bind v $payload)) )? ),*
                        })
                    } else {
                        Ok(match IndexedOwned::deserialize(deserializer)? {
                            $( IndexedOwned::$variant $( ($crate::wire_enum!(@bind v $payload)) )?
                                => $name::$variant $( ($crate::wire_enum!(@bind v $payload)) )? ),*
                        })
                    }
                }
            }
        };
    };
    // Names the payload binding of a newtype variant; the type is only there to drive repetition.
    (@bind $binding:ident $payload:ty) => { $binding };
}
