//! TCP relays between ensemble members, so a test can partition them without root.
//!
//! Each member's configuration names every other member by a relay of its own (member `i`
//! reaches member `j`'s peer and election ports through relays that only `i` uses), so the
//! links between two members can be cut one pair at a time. A cut relay shuts down the
//! connections it carries and closes new ones at once: to ZooKeeper that is a peer that
//! cannot be reached, which it handles as it does a network partition (a follower that loses
//! its leader looks for a new one; a leader that loses its quorum steps down). TCP carries
//! both directions, so cuts are symmetric.

use std::io;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use super::error::{Result, io_err};

/// How often an idle relay looks for a connection or for its end.
const ACCEPT_POLL: Duration = Duration::from_millis(5);

#[derive(Debug, Default)]
struct State {
    cut: AtomicBool,
    stop: AtomicBool,
    /// The connections carried now (both ends), to shut down on a cut.
    open: Mutex<Vec<TcpStream>>,
}

/// A relay from a port of its own on 127.0.0.1 to `target`; stopped on drop.
#[derive(Debug)]
pub(super) struct Relay {
    port: u16,
    state: Arc<State>,
}

impl Relay {
    pub(super) fn start(target: u16) -> Result<Relay> {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .map_err(io_err(format!("binding a relay to port {target}")))?;
        let port = listener
            .local_addr()
            .map_err(io_err("the relay's address"))?
            .port();
        listener
            .set_nonblocking(true)
            .map_err(io_err("a non-blocking relay listener"))?;
        let state = Arc::new(State::default());
        let s = state.clone();
        thread::Builder::new()
            .name(format!("relay-{port}-{target}"))
            .spawn(move || accept_loop(&listener, target, &s))
            .map_err(io_err("starting a relay thread"))?;
        Ok(Relay { port, state })
    }

    /// The port to connect to instead of the target's.
    pub(super) fn port(&self) -> u16 {
        self.port
    }

    /// Cuts the link: what it carries is shut down, and new connections are closed at once.
    pub(super) fn cut(&self) {
        self.state.cut.store(true, Ordering::SeqCst);
        for c in self.state.open.lock().expect("not poisoned").drain(..) {
            let _ = c.shutdown(Shutdown::Both);
        }
    }

    /// Carries new connections again.
    pub(super) fn heal(&self) {
        self.state.cut.store(false, Ordering::SeqCst);
    }

    pub(super) fn is_cut(&self) -> bool {
        self.state.cut.load(Ordering::SeqCst)
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        self.cut();
    }
}

fn accept_loop(listener: &TcpListener, target: u16, state: &Arc<State>) {
    while !state.stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((inbound, _)) => {
                if state.cut.load(Ordering::SeqCst) {
                    continue; // dropped: closed at once
                }
                // A target that is down (killed, restarting) fails the connect: the caller
                // sees a closed connection, as it would connecting to the target itself.
                let _ = carry(inbound, target, state);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => thread::sleep(ACCEPT_POLL),
            Err(_) => thread::sleep(ACCEPT_POLL),
        }
    }
}

fn carry(inbound: TcpStream, target: u16, state: &Arc<State>) -> io::Result<()> {
    inbound.set_nonblocking(false)?;
    let outbound = TcpStream::connect(("127.0.0.1", target))?;
    inbound.set_nodelay(true)?;
    outbound.set_nodelay(true)?;
    {
        let mut open = state.open.lock().expect("not poisoned");
        open.push(inbound.try_clone()?);
        open.push(outbound.try_clone()?);
    }
    pump(inbound.try_clone()?, outbound.try_clone()?)?;
    pump(outbound, inbound)?;
    Ok(())
}

/// Copies `from` to `to` on a thread of its own until either end closes, then closes both.
fn pump(mut from: TcpStream, mut to: TcpStream) -> io::Result<()> {
    thread::Builder::new()
        .name("relay-pump".into())
        .spawn(move || {
            let _ = io::copy(&mut from, &mut to);
            let _ = from.shutdown(Shutdown::Both);
            let _ = to.shutdown(Shutdown::Both);
        })
        .map(drop)
}
