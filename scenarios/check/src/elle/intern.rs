//! Keys and values of micro-operations as small integers.

use std::collections::HashMap;

use serde_json::Value;

/// Canonical JSON text to a small integer, and back.
#[derive(Default)]
pub(crate) struct Interner {
    ids: HashMap<String, u32>,
    pub(crate) values: Vec<Value>,
}

impl Interner {
    pub(crate) fn intern(&mut self, value: &Value) -> u32 {
        // serde_json's maps are sorted, so equal values print equally.
        let next = u32::try_from(self.values.len()).expect("fewer than 2^32 distinct values");
        let id = *self.ids.entry(value.to_string()).or_insert(next);
        if id == next {
            self.values.push(value.clone());
        }
        id
    }

    /// The value interned as `id`.
    pub(crate) fn value(&self, id: u32) -> Value {
        self.values[id as usize].clone()
    }
}
