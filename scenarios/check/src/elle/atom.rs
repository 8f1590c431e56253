//! Keys and elements as a checker compares them: one machine word each, however they were
//! written. A non-negative integer (the usual case: Elle's and adya's generators write
//! integers) is itself, with no table; any other JSON value is its index among the values
//! interned, tagged, so equal values (by canonical JSON text) are one atom.

use rustc_hash::FxHashMap;
use serde_json::Value;

/// A JSON value as a word: itself below 2^63, else tagged with the top bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Atom(u64);

const TAGGED: u64 = 1 << 63;

impl Atom {
    /// An integer below 2^63, as itself; `None` for larger ones.
    pub(crate) fn int(n: u64) -> Option<Atom> {
        (n < TAGGED).then_some(Atom(n))
    }

    /// The integer it is, if it is one below 2^63.
    pub(crate) fn small(self) -> Option<u64> {
        (self.0 < TAGGED).then_some(self.0)
    }
}

/// The values that are not small integers, interned; only looked up, never iterated.
#[derive(Default)]
pub(crate) struct Atoms {
    strings: FxHashMap<Box<str>, u32>,
    /// Any other value, by its canonical text (serde_json's maps are sorted, so equal values
    /// print equally).
    others: FxHashMap<String, u32>,
    values: Vec<Value>,
}

impl Atoms {
    /// The atom of `value`.
    pub(crate) fn of(&mut self, value: &Value) -> Atom {
        match value {
            Value::Number(n) => {
                if let Some(a) = n.as_u64().and_then(Atom::int) {
                    return a;
                }
            }
            Value::String(s) => return self.of_str(s),
            _ => {}
        }
        let next = self.next();
        let id = *self.others.entry(value.to_string()).or_insert(next);
        self.tagged(id, || value.clone())
    }

    /// The atom of the JSON string `s`.
    pub(crate) fn of_str(&mut self, s: &str) -> Atom {
        if let Some(&id) = self.strings.get(s) {
            return Atom(TAGGED | u64::from(id));
        }
        let next = self.next();
        self.strings.insert(s.into(), next);
        self.tagged(next, || Value::String(s.to_owned()))
    }

    /// The value `atom` stands for.
    pub(crate) fn value(&self, atom: Atom) -> Value {
        match atom.small() {
            Some(n) => Value::from(n),
            None => self.values[(atom.0 & !TAGGED) as usize].clone(),
        }
    }

    fn next(&self) -> u32 {
        u32::try_from(self.values.len()).expect("fewer than 2^32 distinct values")
    }

    fn tagged(&mut self, id: u32, value: impl FnOnce() -> Value) -> Atom {
        if id == self.next() {
            self.values.push(value());
        }
        Atom(TAGGED | u64::from(id))
    }
}

/// Atoms numbered densely from 0 in order of first sight, for tables indexed by key.
#[derive(Default)]
pub(crate) struct Dense {
    ids: FxHashMap<Atom, u32>,
    atoms: Vec<Atom>,
}

impl Dense {
    /// The number of `atom`.
    pub(crate) fn id(&mut self, atom: Atom) -> u32 {
        let next = u32::try_from(self.atoms.len()).expect("fewer than 2^32 keys");
        let id = *self.ids.entry(atom).or_insert(next);
        if id == next {
            self.atoms.push(atom);
        }
        id
    }

    /// The atom numbered `id`.
    pub(crate) fn atom(&self, id: u32) -> Atom {
        self.atoms[id as usize]
    }

    /// How many atoms are numbered.
    pub(crate) fn len(&self) -> usize {
        self.atoms.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equal_values_are_one_atom_and_come_back_as_they_were() {
        let mut atoms = Atoms::default();
        let values = [
            json!(0),
            json!(7),
            json!(u64::MAX),
            json!(-3),
            json!(1.5),
            json!("7"),
            json!(null),
            json!([1, {"b": 2, "a": 1}]),
        ];
        let first: Vec<Atom> = values.iter().map(|v| atoms.of(v)).collect();
        for (v, a) in values.iter().zip(&first) {
            assert_eq!(atoms.of(v), *a, "{v} interned twice");
            assert_eq!(atoms.value(*a), *v);
        }
        let distinct: std::collections::BTreeSet<Atom> = first.iter().copied().collect();
        assert_eq!(
            distinct.len(),
            values.len(),
            "distinct values share an atom"
        );
        assert_eq!(atoms.of_str("7"), atoms.of(&json!("7")));
        assert_eq!(atoms.of(&json!(7i64)), atoms.of(&json!(7u64)));
    }
}
