//! The search against the definition, by exhaustive enumeration on small random histories.

use super::*;

/// Whether some order of the operations that took effect, and of any subset of those that may
/// have, respects real time and the cas-register: the definition, by exhaustive enumeration.
fn brute_force(ops: &[crate::history::Operation]) -> bool {
    let ops: Vec<&crate::history::Operation> = ops
        .iter()
        .filter(|op| match op.outcome {
            Outcome::Ok => true,
            Outcome::Info => op.f != F::Read,
            Outcome::Fail => false,
        })
        .collect();
    fn go(ops: &[&crate::history::Operation], placed: &mut Vec<bool>, state: &Value) -> bool {
        let done = |i: usize| placed[i] || ops[i].outcome != Outcome::Ok;
        if (0..ops.len()).all(done) {
            return true;
        }
        for i in 0..ops.len() {
            if placed[i] {
                continue;
            }
            // Every operation that returned before this one was invoked must come first.
            let blocked = (0..ops.len()).any(|j| {
                !placed[j]
                    && ops[j].complete.is_some_and(|c| {
                        ops[j].outcome == Outcome::Ok && c.index < ops[i].invoke.index
                    })
            });
            if blocked {
                continue;
            }
            let next = match ops[i].f {
                F::Read if ops[i].value == *state => state.clone(),
                F::Write => ops[i].value.clone(),
                F::Cas if ops[i].value[0] == *state => ops[i].value[1].clone(),
                _ => continue,
            };
            placed[i] = true;
            let found = go(ops, placed, &next);
            placed[i] = false;
            if found {
                return true;
            }
        }
        false
    }
    go(&ops, &mut vec![false; ops.len()], &Value::Null)
}

fn small_value() -> impl Strategy<Value = Value> {
    prop_oneof![Just(Value::Null), (0i64..3).prop_map(Value::from)]
}

/// A random, usually not linearizable, history: each step invokes or completes an operation
/// of one of three processes, with arbitrary values and outcomes.
fn random_history() -> impl Strategy<Value = History> {
    let step = (0u64..3, 0u8..3, small_value(), small_value(), 0u8..4);
    proptest::collection::vec(step, 1..16).prop_map(|steps| {
        let mut open: [Option<(F, Value)>; 3] = [None, None, None];
        let mut h = History::new();
        for (p, f, a, b, outcome) in steps {
            match open[p as usize].take() {
                None => {
                    let (f, value) = match f {
                        0 => (F::Read, Value::Null),
                        1 => (F::Write, a),
                        _ => (F::Cas, json!([a, b])),
                    };
                    h.push(Event::invoke(p, f.clone(), value.clone()));
                    open[p as usize] = Some((f, value));
                }
                Some((f, value)) => {
                    let value = if f == F::Read { a } else { value };
                    h.push(match outcome {
                        0 => Event::fail(p, f, value),
                        1 => Event::info(p, f, value),
                        _ => Event::ok(p, f, value),
                    });
                }
            }
        }
        h
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// Every pruning rule and reduction in the search is meant to be exact: the verdict must
    /// match the definition on small random histories, linearizable or not.
    #[test]
    fn the_search_agrees_with_brute_force(h in random_history()) {
        let ops = h.operations(Keys::Field).unwrap();
        let expected = brute_force(&ops);
        for checker in [Checker::new(Model::CasRegister), Checker::new(Model::CasRegister).without_precheck()] {
            let verdict = checker.analyse(&h).unwrap();
            prop_assert!(verdict.unknown.is_empty());
            prop_assert_eq!(verdict.is_linearizable(), expected, "{}", verdict);
        }
    }
}
