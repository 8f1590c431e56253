//! Generated histories: large valid ones settle, and planted violations are found.

use super::*;

fn big(seed: u64, tweak: impl FnOnce(&mut Synth)) -> History {
    let mut synth = Synth {
        seed,
        operations: 10_000,
        ..Synth::default()
    };
    tweak(&mut synth);
    synth.history()
}

#[test]
fn generated_cas_register_history_of_10k_operations_is_linearizable() {
    let h = big(1, |_| {});
    let verdict = check_history(&h, Model::CasRegister).unwrap();
    assert!(verdict.is_linearizable(), "{verdict}");
    assert_eq!(verdict.operations, 10_000);
}

#[test]
fn generated_register_history_with_few_values_and_many_processes_is_linearizable() {
    let h = big(2, |s| {
        s.cas = false;
        s.values = 3;
        s.processes = 10;
        s.info_rate = 0.05;
    });
    let verdict = check_history(&h, Model::Register).unwrap();
    assert!(verdict.is_linearizable(), "{verdict}");
}

#[test]
fn generated_keyed_history_is_linearizable() {
    let h = big(3, |s| {
        s.keys = 8;
        s.processes = 50;
    });
    let verdict = check_history(&h, Model::CasRegister).unwrap();
    assert!(verdict.is_linearizable(), "{verdict}");
    assert_eq!(verdict.keys, 8);
}

/// Heavily concurrent histories where a fifth or more of the operations end `info` (40 and 30
/// processes over 4 and 5 values). Trying each node's indeterminate candidates only after its
/// definite ones settles these in some ten thousand states; trying them in call order took over
/// a million (`examples/check_speed.rs` shows the figures), past this budget.
#[test]
fn heavily_concurrent_histories_with_many_info_operations_settle() {
    let register = Synth {
        seed: 0,
        processes: 40,
        operations: 3_000,
        values: 4,
        cas: false,
        info_rate: 0.25,
        ..Synth::default()
    };
    let cas = Synth {
        processes: 30,
        values: 5,
        cas: true,
        info_rate: 0.3,
        ..register.clone()
    };
    for (synth, model) in [(register, Model::Register), (cas, Model::CasRegister)] {
        let h = synth.history();
        let infos = h
            .events()
            .iter()
            .filter(|e| e.kind == EventType::Info)
            .count();
        assert!(infos > 600, "{infos} info operations");
        let verdict = Checker::new(model).max_states(200_000).analyse(&h).unwrap();
        assert!(verdict.is_linearizable(), "{synth:?}: {verdict}");
    }
}

/// A read from the future planted in histories where a fifth of the operations end `info`:
/// the pre-check names it at once among 40 processes; the search alone (no pre-check), which
/// must exhaust every order of the prefix with every info operation a possible explanation,
/// refutes it among 8 in a shorter history (in longer ones it can still exhaust the state
/// budget: refuting is exponential in the info operations open at once, and they never close).
#[test]
fn a_violation_planted_in_a_history_with_many_info_operations_is_found() {
    for (processes, operations, precheck) in [(40, 1_000, true), (8, 300, false)] {
        for seed in 0..4 {
            let h = Synth {
                seed,
                processes,
                operations,
                values: 4,
                cas: false,
                info_rate: 0.2,
                ..Synth::default()
            }
            .history();
            let (h, line) = read_from_the_future(&h, 40 + seed as usize * 37).unwrap();
            let checker = Checker::new(Model::Register).max_states(2_000_000);
            let checker = if precheck {
                checker
            } else {
                checker.without_precheck()
            };
            let verdict = checker.analyse(&h).unwrap();
            assert_eq!(verdict.violations.len(), 1, "seed {seed}: {verdict}");
            let expected = if precheck {
                Cause::NeverWritten
            } else {
                Cause::NoOrder
            };
            assert_eq!(verdict.violations[0].cause, expected);
            assert_eq!(
                verdict.violations[0].op.complete.map(|c| c.line),
                Some(line)
            );
        }
    }
}

/// Replaces the value of the `nth` (mod count) read that completed ok with one never written;
/// returns the mutated history and the completion's line.
fn corrupt_a_read(h: &History, nth: usize) -> Option<(History, usize)> {
    let reads: Vec<usize> = (0..h.len())
        .filter(|&i| h.events()[i].kind == EventType::Ok && h.events()[i].f == F::Read)
        .collect();
    let target = *reads.get(nth % reads.len().max(1))?;
    let mut events = h.events().to_vec();
    events[target].value = json!("never written");
    Some((events.into_iter().collect(), target + 1))
}

#[test]
fn a_corrupted_read_in_10k_operations_is_caught() {
    let (h, line) = corrupt_a_read(&big(4, |_| {}), 2_500).unwrap();
    let verdict = check_history(&h, Model::CasRegister).unwrap();
    assert_eq!(verdict.violations.len(), 1);
    assert_eq!(
        verdict.violations[0].op.complete.map(|c| c.line),
        Some(line)
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn generated_histories_are_linearizable(
        seed in any::<u64>(),
        processes in 1u64..12,
        values in 1u64..6,
        cas in any::<bool>(),
        info_rate in 0.0f64..0.3,
    ) {
        let h = Synth { seed, processes, operations: 300, keys: 1, values, cas, info_rate }.history();
        let verdict = check_history(&h, Model::CasRegister).unwrap();
        prop_assert!(verdict.is_linearizable(), "{}", verdict);
    }

    #[test]
    fn a_read_of_a_value_never_written_is_always_caught(
        seed in any::<u64>(),
        processes in 1u64..12,
        values in 1u64..6,
        keys in 1u64..3,
        info_rate in 0.0f64..0.3,
        nth in any::<usize>(),
    ) {
        let h = Synth { seed, processes, operations: 300, keys, values, cas: true, info_rate }.history();
        let Some((h, line)) = corrupt_a_read(&h, nth) else { return Ok(()) };
        let verdict = check_history(&h, Model::CasRegister).unwrap();
        prop_assert_eq!(verdict.violations.len(), 1);
        // The prefix up to the corrupted read's completion is the shortest that fails.
        prop_assert_eq!(verdict.violations[0].op.complete.map(|c| c.line), Some(line));
        prop_assert_eq!(&verdict.violations[0].op.value, &json!("never written"));
        prop_assert_eq!(verdict.violations[0].cause, Cause::NeverWritten);
    }

    /// The search itself (the pre-check would settle these at once) must refute a read of a
    /// value written only after the read completed.
    #[test]
    fn a_read_from_the_future_is_always_caught(
        seed in any::<u64>(),
        processes in 1u64..6,
        values in 1u64..6,
        info_rate in 0.0f64..0.1,
        nth in any::<usize>(),
    ) {
        let h = Synth { seed, processes, operations: 200, keys: 1, values, cas: true, info_rate }.history();
        let Some((h, line)) = read_from_the_future(&h, nth) else { return Ok(()) };
        let verdict = Checker::new(Model::CasRegister).without_precheck().analyse(&h).unwrap();
        prop_assert_eq!(verdict.violations.len(), 1, "{}", verdict);
        prop_assert_eq!(verdict.violations[0].cause, Cause::NoOrder);
        prop_assert_eq!(verdict.violations[0].op.complete.map(|c| c.line), Some(line));
    }
}

/// Makes the `nth` (mod count) ok read return a fresh value that the first ok write invoked
/// after the read completed then writes; returns the history and the read's completion line.
fn read_from_the_future(h: &History, nth: usize) -> Option<(History, usize)> {
    let ops = h.operations(Keys::Field).ok()?;
    let candidates: Vec<(usize, usize, usize)> = ops
        .iter()
        .filter(|r| r.f == F::Read && r.outcome == Outcome::Ok)
        .filter_map(|r| {
            let done = r.complete?.index;
            let w = ops
                .iter()
                .find(|w| w.f == F::Write && w.outcome == Outcome::Ok && w.invoke.index > done)?;
            Some((done, w.invoke.index, w.complete?.index))
        })
        .collect();
    let &(read_done, w_invoke, w_done) = candidates.get(nth % candidates.len().max(1))?;
    let mut events = h.events().to_vec();
    for i in [read_done, w_invoke, w_done] {
        events[i].value = json!("fresh");
    }
    Some((events.into_iter().collect(), read_done + 1))
}
