//! Golden transcripts (raft-rs's `testdata` habit): a hand-stepped machine test written as
//! data. A transcript feeds a machine its inputs and lists, after each one, every request the
//! machine sends, so a change to the requests a machine emits fails the transcript.
//!
//! One line each (`#` starts a comment):
//!
//! - `new …`: builds the machine; the words are the test's to read (first line only).
//! - `AT session STATE`, `AT reply TOKEN REPLY`, `AT watch TOKEN KIND [STATE]`, `AT timer`:
//!   an input at millisecond `AT`. A `REPLY` is `created PATH [czxid=N] [owner=N]`,
//!   `children NAME…`, `exists none`, `exists [czxid=N] [owner=N]`, `synced`, `deleted`,
//!   `multi RESULT…` (each `deleted`, `created:PATH` or `set:MZXID[:CHILDREN]`, the
//!   node's `mzxid` and `numChildren` after the set), `error NAME [PATH]`
//!   or `error Multi INDEX NAME [PATH]`.
//! - `> TOKEN REQUEST`: the next request the machine sent ([`show`] spells it). Every request
//!   sent must be listed, in order, before the next input and by the end.
//! - `= OUTPUT`: `poll_output`, spelled by `Debug` (`None` while the machine runs).
//! - `timer AT` or `timer none`: what `poll_timer` says.

use std::collections::VecDeque;
use std::fmt::Debug;
use std::path::Path;

use super::{Machine, Millis, Reply, Request, Token};
use crate::{CreateOptions, Error, EventKind, SessionState, Stat, WatchedEvent};

/// Runs every transcript (`*.txt`) in `dir`, building each machine with `build` from the
/// words of its `new` line; panics listing every transcript that failed.
pub(crate) fn run_dir<M>(dir: &Path, build: impl Fn(&[&str]) -> M)
where
    M: Machine,
    M::Output: Debug,
{
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no transcripts in {}", dir.display());
    let failures: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let text = std::fs::read_to_string(file).expect("a readable transcript");
            run(&text, &build)
                .err()
                .map(|e| format!("{}:{e}", file.display()))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Runs one transcript; the error names the line that failed and why.
pub(crate) fn run<M>(text: &str, build: impl Fn(&[&str]) -> M) -> Result<(), String>
where
    M: Machine,
    M::Output: Debug,
{
    let mut machine = None;
    let mut sent: VecDeque<(Token, Request)> = VecDeque::new();
    for (i, line) in text.lines().enumerate() {
        let at = |e: String| format!("{}: {e} (in `{line}`)", i + 1);
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(m) = machine.as_mut() else {
            match words.split_first() {
                Some((&"new", args)) => machine = Some(build(args)),
                _ => return Err(at("the first line must be `new …`".into())),
            }
            continue;
        };
        match words[0] {
            ">" => {
                let (token, request) = sent
                    .pop_front()
                    .ok_or_else(|| at("expected a request, none was sent".into()))?;
                let actual = format!("> {} {}", token.0, show(&request));
                if actual != line {
                    return Err(at(format!("sent `{actual}`")));
                }
            }
            "=" => {
                let actual = format!("= {:?}", m.poll_output());
                if actual != line {
                    return Err(at(format!("output is `{actual}`")));
                }
            }
            "timer" if words.len() == 2 => {
                let actual = match m.poll_timer() {
                    Some(Millis(ms)) => format!("timer {ms}"),
                    None => "timer none".into(),
                };
                if actual != line {
                    return Err(at(format!("poll_timer says `{actual}`")));
                }
            }
            _ => {
                unlisted(&sent).map_err(at)?;
                input(m, &words).map_err(at)?;
                sent.extend(std::iter::from_fn(|| m.poll_request()));
            }
        }
    }
    unlisted(&sent).map_err(|e| format!("end: {e}"))
}

fn unlisted(sent: &VecDeque<(Token, Request)>) -> Result<(), String> {
    match sent.front() {
        None => Ok(()),
        Some((token, request)) => Err(format!(
            "request not listed: `> {} {}`",
            token.0,
            show(request)
        )),
    }
}

/// A request as a transcript spells it; `Debug` for what has no short spelling.
pub(crate) fn show(request: &Request) -> String {
    let watch = |w: bool| if w { " watch" } else { "" };
    match request {
        Request::Create {
            path,
            data,
            options:
                CreateOptions {
                    mode,
                    acl: None,
                    ttl: None,
                },
        } if data.is_empty() => format!("create {path} {mode:?}"),
        Request::Delete { path, version } => match version {
            None => format!("delete {path}"),
            Some(v) => format!("delete {path} version={v}"),
        },
        Request::GetData { path, watch: w } => format!("get {path}{}", watch(*w)),
        Request::Exists { path, watch: w } => format!("exists {path}{}", watch(*w)),
        Request::GetChildren { path, watch: w } => format!("children {path}{}", watch(*w)),
        Request::Sync { path } => format!("sync {path}"),
        Request::Multi(ops) => {
            let ops: Vec<String> = ops.iter().map(show_op).collect();
            format!("multi {}", ops.join(" ; "))
        }
        other => format!("{other:?}"),
    }
}

/// One operation of a `multi`, spelled as the request it stands for.
fn show_op(op: &crate::Op) -> String {
    use crate::Op;
    match op {
        Op::Create {
            path,
            data,
            options,
        } => show(&Request::Create {
            path: path.clone(),
            data: data.clone(),
            options: options.clone(),
        }),
        Op::Delete { path, version } => show(&Request::Delete {
            path: path.clone(),
            version: *version,
        }),
        Op::SetData { path, version, .. } => match version {
            None => format!("set {path}"),
            Some(v) => format!("set {path} version={v}"),
        },
        Op::Check { path, version } => format!("check {path} version={version:?}"),
    }
}

fn input<M: Machine>(m: &mut M, words: &[&str]) -> Result<(), String> {
    let now = Millis(number(words[0])? as u64);
    match (words.get(1).copied(), &words[2.min(words.len())..]) {
        (Some("session"), [state]) => m.handle_session(now, session_state(state)?),
        (Some("reply"), [token, reply @ ..]) => {
            m.handle_reply(now, Token(number(token)? as u64), parse_reply(reply)?)
        }
        (Some("watch"), [token, kind, state @ ..]) => {
            let kind = named(
                kind,
                [
                    EventKind::NodeCreated,
                    EventKind::NodeDeleted,
                    EventKind::NodeDataChanged,
                    EventKind::NodeChildrenChanged,
                    EventKind::Session,
                ],
            )?;
            let state = match state {
                [] => SessionState::Connected,
                [state] => session_state(state)?,
                _ => return Err("watch TOKEN KIND [STATE]".into()),
            };
            let event = WatchedEvent {
                kind,
                state,
                path: String::new(),
            };
            m.handle_watch(now, Token(number(token)? as u64), event)
        }
        (Some("timer"), []) => m.handle_timer(now),
        _ => return Err("not an input".into()),
    }
    Ok(())
}

fn parse_reply(words: &[&str]) -> Result<crate::Result<Reply>, String> {
    Ok(Ok(match words {
        ["created", path, stat @ ..] => Reply::Created {
            path: path.to_string(),
            stat: parse_stat(stat)?,
        },
        ["children", names @ ..] => Reply::Children {
            children: names.iter().map(|s| s.to_string()).collect(),
            stat: Stat::default(),
        },
        ["exists", "none"] => Reply::Exists(None),
        ["exists", stat @ ..] => Reply::Exists(Some(parse_stat(stat)?)),
        ["synced"] => Reply::Synced,
        ["deleted"] => Reply::Deleted,
        ["multi", results @ ..] => Reply::Multi(
            results
                .iter()
                .map(|r| parse_op_result(r))
                .collect::<Result<_, _>>()?,
        ),
        ["error", "Multi", index, name, path @ ..] => {
            return Ok(Err(Error::Multi {
                index: number(index)? as usize,
                source: Box::new(parse_error(name, path)?),
            }));
        }
        ["error", name, path @ ..] => return Ok(Err(parse_error(name, path)?)),
        _ => return Err("not a reply".into()),
    }))
}

fn parse_op_result(word: &str) -> Result<crate::OpResult, String> {
    use crate::OpResult;
    Ok(match word.split_once(':') {
        None if word == "deleted" => OpResult::Delete,
        None if word == "checked" => OpResult::Check,
        Some(("created", path)) => OpResult::Create {
            path: path.to_owned(),
            stat: None,
        },
        Some(("set", stat)) => {
            let (mzxid, children) = stat.split_once(':').unwrap_or((stat, "0"));
            OpResult::SetData {
                stat: Stat {
                    mzxid: number(mzxid)?,
                    num_children: number(children)? as i32,
                    ..Stat::default()
                },
            }
        }
        _ => return Err(format!("not a multi result: {word}")),
    })
}

fn parse_stat(fields: &[&str]) -> Result<Stat, String> {
    let mut stat = Stat::default();
    for field in fields {
        match field.split_once('=') {
            Some(("czxid", n)) => stat.czxid = number(n)?,
            Some(("owner", n)) => stat.ephemeral_owner = number(n)?,
            _ => return Err(format!("not a stat field: {field}")),
        }
    }
    Ok(stat)
}

fn parse_error(name: &str, path: &[&str]) -> Result<Error, String> {
    let path = path.first().unwrap_or(&"").to_string();
    Ok(match name {
        "ConnectionLoss" => Error::ConnectionLoss,
        "OperationTimeout" => Error::OperationTimeout,
        "SessionExpired" => Error::SessionExpired,
        "Closed" => Error::Closed,
        "NoNode" => Error::NoNode { path },
        "NodeExists" => Error::NodeExists { path },
        "BadVersion" => Error::BadVersion { path },
        "NoAuth" => Error::NoAuth { path },
        _ => return Err(format!("not an error: {name}")),
    })
}

fn session_state(word: &str) -> Result<SessionState, String> {
    named(
        word,
        [
            SessionState::Connected,
            SessionState::Disconnected,
            SessionState::Expired,
            SessionState::Closed,
            SessionState::AuthFailed,
        ],
    )
}

/// The value among `all` whose `Debug` spelling is `word`.
pub(crate) fn named<T: Debug, const N: usize>(word: &str, all: [T; N]) -> Result<T, String> {
    all.into_iter()
        .find(|v| format!("{v:?}") == word)
        .ok_or_else(|| format!("unknown: {word}"))
}

/// A decimal or `0x` hexadecimal number.
pub(crate) fn number(word: &str) -> Result<i64, String> {
    match word.strip_prefix("0x") {
        Some(hex) => i64::from_str_radix(hex, 16),
        None => word.parse(),
    }
    .map_err(|e| format!("{word}: {e}"))
}
