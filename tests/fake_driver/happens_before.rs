//! A happens-before check of the fake driver's log: which of the logged operations the GPU
//! would be bound to run in order, and which pairs that touch the same memory (one of them
//! writing) it could run at the same time.
//!
//! Each stream keeps a vector clock, and the host one of its own. An operation on a stream
//! ticks its clock, after taking the host's (what the host did before queuing it, it did
//! before it ran); recording an event copies the clock; a stream waiting for an event takes the
//! maximum of the two; the host takes the stream's clock when it waits for the stream. Memory is
//! device allocations and page-locked host allocations: a copy or a memset uses the bytes it
//! copies or sets; a launch's pointer parameter counts as a write of its whole allocation,
//! since the driver cannot tell what the kernel does with it, unless the test says which bytes
//! the kernel uses ([`Trace::with_launches`]). NCCL's calls (the fake's, `nccl-*`) read their
//! `src=` and write their `dst=`, the bytes they name.

use std::collections::{BTreeMap, HashMap};

type Clock = HashMap<String, u64>;

/// The host, as a stream of its own.
const HOST: &str = "host";

/// One use of an allocation: its stream, the tick of its operation there, its log line,
/// whether it writes, and the bytes `start..end` it uses.
#[derive(Clone)]
struct Use {
    stream: String,
    tick: u64,
    line: usize,
    write: bool,
    start: u64,
    end: u64,
}

/// What an operation uses: an address in an allocation, the bytes from it (the rest of the
/// allocation where not known) and whether it writes.
type Access = (u64, Option<u64>, bool);

/// The bytes a launch of a kernel uses, from its name and its parameters' values, where a test
/// knows them: `(address, bytes, writes)` for each array.
pub type Launches = fn(&str, &[u64]) -> Option<Vec<(u64, u64, bool)>>;

#[derive(Default)]
pub struct Trace {
    clocks: HashMap<String, Clock>,
    events: HashMap<String, Clock>,
    /// Allocations by first address: the end, and their uses.
    memory: BTreeMap<u64, (u64, Vec<Use>)>,
    /// Each operation's stream, tick and clock, by log line.
    ops: HashMap<usize, (String, u64, Clock)>,
    races: Vec<String>,
    launches: Option<Launches>,
}

impl Trace {
    /// Reads the log's lines in order.
    pub fn of(lines: &[String]) -> Trace {
        Trace::with_launches(lines, None)
    }

    /// Reads the log's lines in order, the bytes of the launches `launches` knows taken from
    /// it.
    pub fn with_launches(lines: &[String], launches: Option<Launches>) -> Trace {
        let mut trace = Trace {
            launches,
            ..Trace::default()
        };
        for (i, line) in lines.iter().enumerate() {
            trace.step(i, line);
        }
        trace
    }

    /// The unordered pairs of conflicting uses found, described.
    pub fn races(&self) -> &[String] {
        &self.races
    }

    /// Whether the operation of log line `a` happens before that of line `b`.
    pub fn ordered(&self, a: usize, b: usize) -> bool {
        let (stream, tick, _) = &self.ops[&a];
        self.ops[&b].2.get(stream).copied().unwrap_or(0) >= *tick
    }

    /// Whether the host, at the end of the log, has waited for the operation of line `a`.
    pub fn host_waited_for(&self, a: usize) -> bool {
        let (stream, tick, _) = &self.ops[&a];
        let host = self.clocks.get(HOST);
        host.and_then(|c| c.get(stream)).copied().unwrap_or(0) >= *tick
    }

    fn step(&mut self, i: usize, line: &str) {
        let words: Vec<&str> = line.split(' ').collect();
        let field = |name: &str| {
            words
                .iter()
                .find_map(|w| w.strip_prefix(name).and_then(|v| v.strip_prefix('=')))
                .map(String::from)
        };
        let number = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
        let dec = |s: &str| s.parse::<u64>().ok();
        match words[0] {
            "record" => {
                let clock = self.clock(&field("stream").unwrap()).clone();
                self.events.insert(field("event").unwrap(), clock);
            }
            "wait" => {
                let event = self.events.get(&field("event").unwrap()).cloned();
                merge(
                    self.clock(&field("stream").unwrap()),
                    &event.unwrap_or_default(),
                );
            }
            "sync" => {
                let stream = self.clock(&field("stream").unwrap()).clone();
                merge(self.clock(HOST), &stream);
            }
            "alloc" => {
                let (at, bytes) = (number(words[1]).unwrap(), dec(words[2]).unwrap());
                let old = self.memory.remove(&at).map(|(_, uses)| uses);
                self.memory
                    .insert(at, (at + bytes, old.unwrap_or_default()));
                let on = field("stream").unwrap_or_else(|| HOST.into());
                self.op(i, &on, &[(at, None, true)]);
            }
            "free" => {
                let on = field("stream").unwrap_or_else(|| HOST.into());
                self.op(i, &on, &[(number(words[1]).unwrap(), None, true)]);
            }
            "host" => {
                let at = number(&field("at").unwrap()).unwrap();
                if words[1] == "alloc" || words[1] == "register" {
                    let end = at + dec(words[2]).unwrap();
                    self.memory.insert(at, (end, Vec::new()));
                }
                self.op(i, HOST, &[(at, None, true)]);
            }
            "memset" => self.op(
                i,
                &field("stream").unwrap(),
                &[(number(words[1]).unwrap(), dec(words[2]), true)],
            ),
            "htod" | "dtoh" | "dtod" | "peer" | "copy2d" | "nccl-send" | "nccl-recv"
            | "nccl-broadcast" | "nccl-allreduce" | "nccl-reduce"
                if words[1] != "access" =>
            {
                // A pitched copy's size is its rows' (`copy2d WxH`): its allocations, whole.
                let bytes = dec(words[1]);
                let dst = field("dst").map(|at| (number(&at).unwrap(), bytes, true));
                let src = field("src").map(|at| (number(&at).unwrap(), bytes, false));
                let uses: Vec<_> = dst.into_iter().chain(src).collect();
                self.op(i, &field("stream").unwrap(), &uses);
            }
            "launch" | "launch-cooperative" => {
                let params: Vec<u64> = field("params")
                    .unwrap_or_default()
                    .split(',')
                    .filter_map(number)
                    .collect();
                let known = self.launches.and_then(|f| f(words[1], &params));
                let uses: Vec<Access> = match known {
                    Some(arrays) => arrays
                        .into_iter()
                        .map(|(at, n, w)| (at, Some(n), w))
                        .collect(),
                    None => params.into_iter().map(|p| (p, None, true)).collect(),
                };
                self.op(i, &field("stream").unwrap(), &uses);
            }
            _ => {}
        }
    }

    fn clock(&mut self, stream: &str) -> &mut Clock {
        self.clocks.entry(stream.to_string()).or_default()
    }

    /// An operation of line `i` on `stream` using the memory at each address (the bytes given,
    /// else the rest of its allocation; writing where marked); addresses outside every
    /// allocation are values, not memory.
    fn op(&mut self, i: usize, stream: &str, uses: &[Access]) {
        let host = self.clock(HOST).clone();
        let clock = self.clock(stream);
        merge(clock, &host);
        let tick = clock.get(stream).copied().unwrap_or(0) + 1;
        clock.insert(stream.to_string(), tick);
        let clock = clock.clone();
        for &(address, bytes, write) in uses {
            let Some((&first, (end, prior))) = self.memory.range_mut(..=address).next_back() else {
                continue;
            };
            if address >= *end {
                continue;
            }
            let (start, stop) = match bytes {
                Some(n) => (address, address + n),
                None => (first, *end),
            };
            let overlaps = |p: &&Use| p.start < stop && start < p.end;
            for p in prior.iter().filter(|p| p.write || write).filter(overlaps) {
                if p.stream != stream && clock.get(&p.stream).copied().unwrap_or(0) < p.tick {
                    self.races.push(format!(
                        "line {} (stream {}) and line {i} (stream {stream}) use {address:#x} unordered",
                        p.line, p.stream
                    ));
                }
            }
            prior.push(Use {
                stream: stream.to_string(),
                tick,
                line: i,
                write,
                start,
                end: stop,
            });
        }
        self.ops.insert(i, (stream.to_string(), tick, clock));
    }
}

fn merge(into: &mut Clock, from: &Clock) {
    for (stream, &tick) in from {
        let at = into.entry(stream.clone()).or_default();
        *at = (*at).max(tick);
    }
}

#[test]
fn the_check_finds_a_race_and_the_wait_that_prevents_it() {
    let log = |wait: bool| {
        let mut lines = vec![
            "alloc 0x1000 64 stream=0xa".to_string(),
            "launch k grid=1,1,1 block=1,1,1 shared=0 stream=0xa params=0x1000".into(),
            "record event=0xe stream=0xa".into(),
        ];
        if wait {
            lines.push("wait stream=0xb event=0xe".into());
        }
        lines.push("dtoh 64 stream=0xb dst=0x9000 src=0x1000".into());
        lines
    };
    let racy = Trace::of(&log(false));
    // The copy is ordered after neither the allocation nor the launch.
    assert_eq!(racy.races().len(), 2, "{:?}", racy.races());
    assert!(racy.races()[1].contains("line 1") && racy.races()[1].contains("line 3"));
    assert!(!racy.ordered(1, 3));
    let waited = Trace::of(&log(true));
    assert!(waited.races().is_empty(), "{:?}", waited.races());
    assert!(waited.ordered(1, 4) && waited.ordered(0, 4));
}

#[test]
fn uses_race_only_where_their_bytes_overlap() {
    let lines: Vec<String> = [
        "alloc 0x1000 64",
        "htod 32 stream=0xa dst=0x1000 src=0x9000",
        "htod 32 stream=0xb dst=0x1020 src=0x9020",
        "launch k grid=1,1,1 block=1,1,1 shared=0 stream=0xa params=0x1000,8",
        "dtoh 4 stream=0xb dst=0x9000 src=0x1020",
        "dtoh 4 stream=0xb dst=0x9000 src=0x101c",
    ]
    .map(String::from)
    .into();
    // The copies in are disjoint; the launch, of unknown bytes, uses all of the allocation:
    // it races with stream 0xb's copy in and both its copies out. The last copy out reads
    // what stream 0xa's copy in wrote, unordered.
    let whole = Trace::of(&lines);
    assert_eq!(whole.races().len(), 4, "{:?}", whole.races());
    // Told that `k` writes its first parameter's 4-byte elements, as many as the second
    // says, the launch uses stream 0xa's chunk alone: only the copy out of its last element
    // races, with the copy in and the launch.
    let known: Launches =
        |name, params| (name == "k").then(|| vec![(params[0], params[1] * 4, true)]);
    let precise = Trace::with_launches(&lines, Some(known));
    assert_eq!(precise.races().len(), 2, "{:?}", precise.races());
    assert!(precise.races().iter().all(|r| r.contains("line 5")));
}
