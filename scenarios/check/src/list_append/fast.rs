//! Micro-operations parsed straight from a history's text, for the shapes Elle's and adya's
//! generators write: `["append", k, v]` and `["r", k, null | [v, ...]]` with non-negative
//! integer or string keys and elements. Anything else fails to parse here and is read as
//! JSON instead ([`super::parse`]), so the fast path changes no verdict and no error.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde_json::Value;

use crate::elle::atom::{Atom, Atoms};

/// A key or element: a non-negative integer below 2^63, or a string.
#[derive(Debug)]
pub(super) enum FastAtom<'a> {
    Int(Atom),
    Str(Cow<'a, str>),
}

impl FastAtom<'_> {
    pub(super) fn atom(&self, atoms: &mut Atoms) -> Atom {
        match self {
            FastAtom::Int(a) => *a,
            FastAtom::Str(s) => atoms.of_str(s),
        }
    }

    fn json(&self) -> Value {
        match self {
            FastAtom::Int(a) => Value::from(a.small().expect("fast integers are small")),
            FastAtom::Str(s) => Value::String(s.to_string()),
        }
    }
}

/// A micro-operation's value: `null`, an atom, or a list of atoms.
#[derive(Debug)]
pub(super) enum FastV<'a> {
    Null,
    Atom(FastAtom<'a>),
    List(Vec<FastAtom<'a>>),
}

/// `[f, key, value]`: whether `f` is `append` (else it is `r`), the key, the value.
#[derive(Debug)]
pub(super) struct FastMop<'a>(
    pub(super) bool,
    pub(super) FastAtom<'a>,
    pub(super) FastV<'a>,
);

impl FastMop<'_> {
    /// The micro-operation as JSON.
    pub(super) fn json(&self) -> Value {
        let v = match &self.2 {
            FastV::Null => Value::Null,
            FastV::Atom(a) => a.json(),
            FastV::List(l) => Value::Array(l.iter().map(FastAtom::json).collect()),
        };
        let f = if self.0 { "append" } else { "r" };
        Value::Array(vec![f.into(), self.1.json(), v])
    }
}

fn not_fast<E: de::Error>() -> E {
    E::custom("not a fast micro-operation")
}

struct AtomVisitor;

impl<'de> Visitor<'de> for AtomVisitor {
    type Value = FastAtom<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a non-negative integer or a string")
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Self::Value, E> {
        Atom::int(n).map(FastAtom::Int).ok_or_else(not_fast)
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Self::Value, E> {
        u64::try_from(n)
            .map_err(|_| not_fast())
            .and_then(|n| self.visit_u64(n))
    }

    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(FastAtom::Str(Cow::Borrowed(s)))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Ok(FastAtom::Str(Cow::Owned(s.to_owned())))
    }
}

impl<'de> Deserialize<'de> for FastAtom<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(AtomVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = FastV<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("null, an atom or a list of atoms")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(FastV::Null)
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Self::Value, E> {
        AtomVisitor.visit_u64(n).map(FastV::Atom)
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Self::Value, E> {
        AtomVisitor.visit_i64(n).map(FastV::Atom)
    }

    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
        AtomVisitor.visit_borrowed_str(s).map(FastV::Atom)
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        AtomVisitor.visit_str(s).map(FastV::Atom)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut list = Vec::with_capacity(seq.size_hint().unwrap_or(8));
        while let Some(a) = seq.next_element::<FastAtom<'de>>()? {
            list.push(a);
        }
        Ok(FastV::List(list))
    }
}

impl<'de> Deserialize<'de> for FastV<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

/// `"append"` (true) or `"r"` (false), read without copying.
struct Append(bool);

impl<'de> Deserialize<'de> for Append {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct F;
        impl Visitor<'_> for F {
            type Value = Append;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("\"append\" or \"r\"")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Append, E> {
                match s {
                    "append" => Ok(Append(true)),
                    "r" => Ok(Append(false)),
                    _ => Err(not_fast()),
                }
            }
        }
        d.deserialize_str(F)
    }
}

struct MopVisitor;

impl<'de> Visitor<'de> for MopVisitor {
    type Value = FastMop<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[f, key, value]")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let append = seq.next_element::<Append>()?.ok_or_else(not_fast)?.0;
        let key = seq.next_element()?.ok_or_else(not_fast)?;
        let value = seq.next_element()?.ok_or_else(not_fast)?;
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(not_fast());
        }
        Ok(FastMop(append, key, value))
    }
}

impl<'de> Deserialize<'de> for FastMop<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_seq(MopVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Option<Vec<FastMop<'_>>> {
        serde_json::from_str(text).ok()
    }

    #[test]
    fn the_usual_shapes_parse_and_others_are_left_to_json() {
        let mops = parse(r#"[["append",5,1],["r","k",null],["r",7,[1,2,"x"]]]"#).unwrap();
        assert_eq!(mops.len(), 3);
        assert_eq!(
            Value::Array(mops.iter().map(FastMop::json).collect()),
            serde_json::json!([["append", 5, 1], ["r", "k", null], ["r", 7, [1, 2, "x"]]])
        );
        for other in [
            r#"[["append",-1,1]]"#,
            r#"[["append",1,1.5]]"#,
            r#"[["w",1,1]]"#,
            r#"[["r",1,null,4]]"#,
            r#"[["r",1]]"#,
            r#"[["r",{"a":1},null]]"#,
            r#"[["r",1,[[1]]]]"#,
            r#"{"a":1}"#,
        ] {
            assert!(parse(other).is_none(), "{other} parsed fast");
        }
    }
}
