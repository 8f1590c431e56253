//! Reading a JSON-lines history file straight into [`Parsed`], never holding it as JSON: in
//! blocks of lines, each block's lines parsed on every core, then taken by the [`Builder`] in
//! file order. Errors are the ones [`History::load`] and [`Parsed::new`] would give, in the
//! same order: a line that is not an event first, then one that cannot be paired, then the
//! checker's own.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Read as _};
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::CheckError;
use super::fast::FastMop;
use super::parse::{Builder, Event, Incoming, Parsed};
use crate::history::edn::looks_like_edn;
use crate::history::{ErrorCode, EventType, History, HistoryError, Position, Process};

/// How a file is read: `bytes` at a time (big enough to keep every core busy, small beside
/// the history), a block's lines parsed on several threads once it has `parallel_from`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Blocks {
    pub(super) bytes: usize,
    pub(super) parallel_from: usize,
}

const BLOCKS: Blocks = Blocks {
    bytes: 8 << 20,
    parallel_from: 2048,
};

/// One line of the file as [`crate::history::Event`] reads it, its value as `V`: the
/// micro-operations parsed fast, or (when they are not of the usual shapes) left as text.
#[derive(Deserialize)]
#[serde(bound(deserialize = "V: Deserialize<'de>, 'de: 'a"))]
struct Line<'a, V> {
    #[serde(rename = "type")]
    kind: EventType,
    process: Process,
    #[serde(borrow)]
    f: Cow<'a, str>,
    #[serde(default = "Option::default")]
    value: Option<V>,
    #[serde(default)]
    key: Option<Value>,
    // Read only to refuse the lines `Event` refuses.
    #[serde(default, rename = "time")]
    _time: Option<u64>,
    #[serde(default, rename = "index")]
    _index: Option<u64>,
    #[serde(default, deserialize_with = "crate::history::code::lenient")]
    error: Option<ErrorCode>,
}

/// A line parsed, one way or the other.
enum Parsed1<'a> {
    Fast(Line<'a, Vec<FastMop<'a>>>),
    Text(Line<'a, &'a RawValue>),
}

static NULL: Value = Value::Null;

impl Parsed {
    /// The history in the file at `path`; an EDN file is read as a [`History`] first.
    pub(super) fn from_file(path: &Path) -> Result<Parsed, CheckError> {
        Parsed::read_file(path, BLOCKS)
    }

    /// [`Parsed::from_file`], reading in `blocks`.
    pub(super) fn read_file(path: &Path, blocks: Blocks) -> Result<Parsed, CheckError> {
        let open = |source| HistoryError::Open {
            path: path.to_owned(),
            source,
        };
        let mut file = File::open(path).map_err(open)?;
        let mut buf = Vec::with_capacity(blocks.bytes + blocks.bytes / 4);
        let mut eof = fill(&mut file, &mut buf, blocks.bytes, 0)?;
        let named_edn = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("edn"));
        let blank = buf.iter().all(|b| b.is_ascii_whitespace() || *b == b',');
        if named_edn || looks_like_edn(&buf) || (blank && !eof) {
            return Parsed::new(&History::load(path)?);
        }
        let mut builder = Builder::default();
        // The first event that cannot be paired; reported unless a later line is no event.
        let mut unpaired: Option<CheckError> = None;
        let (mut lines_before, mut events) = (0, 0);
        loop {
            let cut = match buf.iter().rposition(|&b| b == b'\n') {
                _ if eof => buf.len(),
                Some(i) => i + 1,
                None => {
                    eof = fill(&mut file, &mut buf, blocks.bytes, lines_before)?;
                    continue;
                }
            };
            let block = &buf[..cut];
            for parsed in parse_block(block, lines_before, blocks.parallel_from) {
                let Some((line, parsed)) = parsed? else {
                    continue;
                };
                let here = Position {
                    index: events,
                    line,
                };
                events += 1;
                if unpaired.is_some() {
                    continue;
                }
                let event = match &parsed {
                    Parsed1::Fast(l) => event(here, l, |v| Incoming::Fast(v.as_slice())),
                    Parsed1::Text(l) => event(here, l, |v| Incoming::Text(v.get())),
                };
                if let Err(e) = builder.event(event) {
                    unpaired = Some(e);
                }
            }
            lines_before += block.iter().filter(|&&b| b == b'\n').count();
            if eof {
                break;
            }
            buf.drain(..cut);
            eof = fill(&mut file, &mut buf, blocks.bytes, lines_before)?;
        }
        match unpaired {
            Some(e) => Err(e),
            None => builder.finish(),
        }
    }
}

/// The builder's view of a line.
fn event<'l, V>(
    here: Position,
    l: &'l Line<'_, V>,
    value: impl FnOnce(&'l V) -> Incoming<'l>,
) -> Event<'l> {
    Event {
        here,
        kind: l.kind,
        process: &l.process,
        f: &l.f,
        value: l.value.as_ref().map_or(Incoming::Json(&NULL), value),
        key: l.key.as_ref(),
        error: l.error,
    }
}

/// Reads until `buf` holds a block or the file ends (then `true`).
fn fill(
    file: &mut File,
    buf: &mut Vec<u8>,
    block: usize,
    lines_before: usize,
) -> Result<bool, HistoryError> {
    // A line longer than a block (none is, in practice) takes another block's worth.
    let want = if buf.len() >= block {
        block
    } else {
        block - buf.len()
    };
    let read = file
        .by_ref()
        .take(want as u64)
        .read_to_end(buf)
        .map_err(|source| HistoryError::Read {
            line: lines_before + 1,
            source,
        })?;
    Ok(read == 0 || read < want)
}

/// The block's lines (the first is line `lines_before + 1`), parsed on every core, in order;
/// `None` for a blank line.
fn parse_block(
    block: &[u8],
    lines_before: usize,
    parallel_from: usize,
) -> Vec<Result<Option<(usize, Parsed1<'_>)>, HistoryError>> {
    let mut lines: Vec<&[u8]> = block.split(|&b| b == b'\n').collect();
    if block.last() == Some(&b'\n') {
        lines.pop();
    }
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    let per = lines.len().div_ceil(threads).max(1);
    fn parse<'a>(
        first: usize,
        part: &[&'a [u8]],
    ) -> Vec<Result<Option<(usize, Parsed1<'a>)>, HistoryError>> {
        part.iter()
            .enumerate()
            .map(|(i, bytes)| parse_line(bytes, first + i + 1))
            .collect()
    }
    if threads == 1 || lines.len() < parallel_from {
        return parse(lines_before, &lines);
    }
    std::thread::scope(|s| {
        let parts: Vec<_> = lines
            .chunks(per)
            .enumerate()
            .map(|(k, part)| s.spawn(move || parse(lines_before + k * per, part)))
            .collect();
        parts
            .into_iter()
            .flat_map(|p| p.join().expect("a line parser panicked"))
            .collect()
    })
}

fn parse_line(bytes: &[u8], line: usize) -> Result<Option<(usize, Parsed1<'_>)>, HistoryError> {
    let text = std::str::from_utf8(bytes).map_err(|_| HistoryError::Read {
        line,
        source: io::Error::new(
            io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        ),
    })?;
    let text = text.strip_suffix('\r').unwrap_or(text);
    if text.trim().is_empty() {
        return Ok(None);
    }
    // The usual line parses in one pass; any other (or one that is no event) again, its
    // value kept as text, which also gives the error `Event` would.
    if let Ok(l) = serde_json::from_str::<Line<'_, Vec<FastMop<'_>>>>(text)
        && (l.f == "txn" || l.value.is_none())
    {
        return Ok(Some((line, Parsed1::Fast(l))));
    }
    let l = serde_json::from_str::<Line<'_, &RawValue>>(text)
        .map_err(|source| HistoryError::Parse { line, source })?;
    Ok(Some((line, Parsed1::Text(l))))
}
