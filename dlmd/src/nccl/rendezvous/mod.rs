//! [`Rendezvous`]: rank 0's [`UniqueId`] handed to the other ranks over TCP, at the address a
//! launcher such as torchrun gives every rank.
//!
//! The exchange is small and bounded in time. Rank 0 listens on the rendezvous port and answers
//! each rank that asks, until every rank has its id or the time is up. The others connect
//! (again and again while rank 0 is not listening yet) and read the id. Both sides name what
//! went wrong: the ranks that never asked, the address nobody answered on, a peer that spoke
//! something else.
//!
//! The wire format, version 1, all integers little-endian:
//! - a rank asks with 20 bytes: the magic `DLMDNCID`, the version (`u32`), its rank (`u32`)
//!   and its world size (`u32`);
//! - rank 0 answers with 136 bytes: the magic and the id's 128 bytes.
//!
//! Anything else is not an id: a connection that does not start with the magic is dropped and
//! rank 0 keeps listening; a rank with another world size, or outside it, fails the exchange.
//! World sizes are bounded by NCCL's (a C `int`) before anything is allocated for them.
//!
//! The rendezvous port trusts its network, as torchrun's store does: whoever reaches it is
//! handed the id, which lets it join the communicator. Serve it on a network only the job's
//! hosts reach.

use super::{NcclError, UniqueId};
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

const MAGIC: [u8; 8] = *b"DLMDNCID";
const VERSION: u32 = 1;
const ASK: usize = 20;
const ANSWER: usize = 8 + 128;
/// How long rank 0 waits for one connected rank to ask, so a silent peer cannot stall the rest.
const ASK_TIMEOUT: Duration = Duration::from_secs(5);
/// How often rank 0 polls for connections, and the others retry a refused one.
const POLL: Duration = Duration::from_millis(10);

/// The environment variable that overrides the port of [`Rendezvous::from_env`].
pub const PORT_VARIABLE: &str = "DLMD_NCCL_PORT";

/// Where rank 0 serves the [`UniqueId`] and the other ranks fetch it: a host name or address and
/// a port.
///
/// ```
/// use dlmd::nccl::Rendezvous;
///
/// let at = Rendezvous::new("127.0.0.1", 29501);
/// assert_eq!(at.to_string(), "127.0.0.1:29501");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rendezvous {
    host: String,
    port: u16,
}

impl core::fmt::Display for Rendezvous {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

impl Rendezvous {
    /// The rendezvous at `host` (a name or an IPv4 or IPv6 address) and `port`.
    pub fn new(host: impl Into<String>, port: u16) -> Self {
        Self {
            host: host.into(),
            port,
        }
    }

    /// The host.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The rendezvous a launcher describes: `MASTER_ADDR` and, for the port, `DLMD_NCCL_PORT`
    /// where it is set, else `MASTER_PORT` + 1.
    ///
    /// torchrun's agent keeps its own store on `MASTER_PORT` itself, so the id goes through the
    /// next port on the same host; set `DLMD_NCCL_PORT` (the same on every rank) where that one
    /// is taken.
    pub fn from_env() -> Result<Self, NcclError> {
        Self::from_lookup(std::env::var)
    }

    fn from_lookup(var: impl Fn(&'static str) -> Result<String, std::env::VarError>) -> Result<Self, NcclError> {
        let read = |name: &'static str| match var(name) {
            Ok(v) => Ok(Some(v)),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(e) => Err(NcclError::Env {
                name,
                why: e.to_string(),
            }),
        };
        let port = |name: &'static str, text: String| {
            text.trim().parse::<u16>().map_err(|e| NcclError::Env {
                name,
                why: format!("{text:?} is not a port: {e}"),
            })
        };
        let host = read("MASTER_ADDR")?.ok_or(NcclError::Env {
            name: "MASTER_ADDR",
            why: "not set (start the ranks with torchrun or set it to rank 0's host)".into(),
        })?;
        let port = match read(PORT_VARIABLE)? {
            Some(text) => port(PORT_VARIABLE, text)?,
            None => {
                let text = read("MASTER_PORT")?.ok_or(NcclError::Env {
                    name: "MASTER_PORT",
                    why: "not set (start the ranks with torchrun, or set it or DLMD_NCCL_PORT)".into(),
                })?;
                let master = port("MASTER_PORT", text)?;
                master.checked_add(1).ok_or(NcclError::Env {
                    name: "MASTER_PORT",
                    why: format!("{master} leaves no next port for the NCCL id; set DLMD_NCCL_PORT"),
                })?
            }
        };
        Ok(Self::new(host.trim(), port))
    }

    /// Joins rank `rank` of `world`: rank 0 makes a fresh id ([`UniqueId::new`]) and
    /// [`serve`](Self::serve)s it, the others [`fetch`](Self::fetch) it; each waits at most
    /// `timeout`.
    pub fn exchange(&self, rank: usize, world: usize, timeout: Duration) -> Result<UniqueId, NcclError> {
        check_rank(rank, world)?;
        if rank == 0 {
            let id = UniqueId::new()?;
            self.serve(&id, world, timeout)?;
            Ok(id)
        } else {
            self.fetch(rank, world, timeout)
        }
    }

    /// Rank 0's side: listens on the rendezvous port (every interface of the host's address
    /// family) and hands `id` to each of the ranks 1 to `world` − 1 as it asks. Returns once
    /// all have it; after `timeout`, fails naming the ranks that never asked. A world of one
    /// has nobody to serve: nothing is bound.
    pub fn serve(&self, id: &UniqueId, world: usize, timeout: Duration) -> Result<(), NcclError> {
        check_rank(0, world)?;
        if world == 1 {
            return Ok(());
        }
        let family = self.resolve()?;
        let any = match family {
            SocketAddr::V4(_) => SocketAddr::from((Ipv4Addr::UNSPECIFIED, self.port)),
            SocketAddr::V6(_) => SocketAddr::from((Ipv6Addr::UNSPECIFIED, self.port)),
        };
        let listener = TcpListener::bind(any).map_err(|e| {
            self.error(
                0,
                format!(
                    "cannot listen on port {}: {e} (set DLMD_NCCL_PORT to a free one)",
                    self.port
                ),
            )
        })?;
        serve_on(&listener, self, id, world, timeout)
    }

    /// The other ranks' side: asks rank 0 for the id, retrying while nobody listens yet, for
    /// at most `timeout`.
    pub fn fetch(&self, rank: usize, world: usize, timeout: Duration) -> Result<UniqueId, NcclError> {
        check_rank(rank, world)?;
        if rank == 0 {
            return Err(self.error(0, "rank 0 serves the id; it does not fetch it".into()));
        }
        let deadline = Instant::now() + timeout;
        let mut ask = [0u8; ASK];
        ask[..8].copy_from_slice(&MAGIC);
        ask[8..12].copy_from_slice(&VERSION.to_le_bytes());
        ask[12..16].copy_from_slice(&wire(rank).to_le_bytes());
        ask[16..20].copy_from_slice(&wire(world).to_le_bytes());
        let addr = self.resolve()?;
        let mut last = String::from("nobody answered");
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(self.error(
                    rank,
                    format!("no id from rank 0 within {timeout:?} ({last}); is rank 0 running, with the same port?"),
                ));
            }
            match TcpStream::connect_timeout(&addr, left) {
                Ok(mut stream) => match ask_once(&mut stream, &ask, left) {
                    Ok(answer) => {
                        if answer[..8] != MAGIC {
                            return Err(self.error(rank, "the answer is not a dlmd NCCL id".into()));
                        }
                        let mut bytes = [0u8; 128];
                        bytes.copy_from_slice(&answer[8..]);
                        return Ok(UniqueId::from_bytes(bytes));
                    }
                    // Rank 0 closed without answering: it refused this rank, or failed.
                    Err(e) if e.kind() == ErrorKind::UnexpectedEof => {
                        return Err(self.error(
                            rank,
                            "rank 0 closed the connection without an id (see its error)".into(),
                        ));
                    }
                    Err(e) => last = e.to_string(),
                },
                Err(e) => last = e.to_string(),
            }
            std::thread::sleep(POLL.min(deadline.saturating_duration_since(Instant::now())));
        }
    }

    /// The first address the host resolves to.
    fn resolve(&self) -> Result<SocketAddr, NcclError> {
        (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| NcclError::Rendezvous {
                address: self.to_string(),
                why: format!("cannot resolve the host: {e}"),
            })?
            .next()
            .ok_or_else(|| NcclError::Rendezvous {
                address: self.to_string(),
                why: "the host resolves to no address".into(),
            })
    }

    fn error(&self, rank: usize, why: String) -> NcclError {
        NcclError::Rendezvous {
            address: self.to_string(),
            why: format!("rank {rank}: {why}"),
        }
    }
}

/// A rank below a world size NCCL can hold (its `nranks` is a C `int`), before anything is
/// allocated for the world.
fn check_rank(rank: usize, world: usize) -> Result<(), NcclError> {
    if rank >= world || core::ffi::c_int::try_from(world).is_err() {
        return Err(NcclError::World { rank, world });
    }
    Ok(())
}

/// A rank or world size as it travels (checked to fit by [`check_rank`]).
fn wire(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn ask_once(stream: &mut TcpStream, ask: &[u8; ASK], left: Duration) -> std::io::Result<[u8; ANSWER]> {
    stream.set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
    stream.write_all(ask)?;
    let mut answer = [0u8; ANSWER];
    stream.read_exact(&mut answer)?;
    Ok(answer)
}

/// Rank 0's loop on a listener already bound (tests bind port 0).
fn serve_on(
    listener: &TcpListener,
    at: &Rendezvous,
    id: &UniqueId,
    world: usize,
    timeout: Duration,
) -> Result<(), NcclError> {
    let deadline = Instant::now() + timeout;
    let mut waiting: Vec<usize> = (1..world).collect();
    listener
        .set_nonblocking(true)
        .map_err(|e| at.error(0, format!("cannot poll the listener: {e}")))?;
    let mut answer = [0u8; ANSWER];
    answer[..8].copy_from_slice(&MAGIC);
    answer[8..].copy_from_slice(&id.to_bytes());
    while !waiting.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(at.error(
                0,
                format!(
                    "ranks {waiting:?} did not ask for the id within {timeout:?}; are they running, with the same port?"
                ),
            ));
        }
        let mut stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {
                std::thread::sleep(POLL.min(left));
                continue;
            }
            Err(e) => return Err(at.error(0, format!("accepting a connection: {e}"))),
        };
        let Some(rank) = read_ask(&mut stream, world, left.min(ASK_TIMEOUT)).map_err(|why| at.error(0, why))? else {
            continue;
        };
        // A rank whose answer is lost asks again: it is served again, counted once.
        if stream.write_all(&answer).is_ok() {
            waiting.retain(|&r| r != rank);
        }
    }
    Ok(())
}

/// The rank a connection asks for, `None` for a connection that is not a dlmd rank (dropped),
/// or why the exchange cannot go on (a rank of another world).
fn read_ask(stream: &mut TcpStream, world: usize, wait: Duration) -> Result<Option<usize>, String> {
    let mut ask = [0u8; ASK];
    let read = stream
        .set_nonblocking(false)
        .and_then(|()| stream.set_read_timeout(Some(wait)))
        .and_then(|()| stream.read_exact(&mut ask));
    match read {
        Ok(()) => parse_ask(&ask, world),
        Err(_) => Ok(None),
    }
}

/// What a rank's 20 bytes ask for: see [`read_ask`].
fn parse_ask(ask: &[u8; ASK], world: usize) -> Result<Option<usize>, String> {
    if ask[..8] != MAGIC {
        return Ok(None);
    }
    let word = |at: usize| u32::from_le_bytes([ask[at], ask[at + 1], ask[at + 2], ask[at + 3]]);
    let (version, rank, theirs) = (word(8), word(12) as usize, word(16) as usize);
    if version != VERSION {
        return Err(format!(
            "a rank speaks version {version} of the id exchange, this one {VERSION}"
        ));
    }
    if theirs != world {
        return Err(format!(
            "rank {rank} was started with a world of {theirs}, rank 0 with {world}"
        ));
    }
    if rank == 0 || rank >= world {
        return Err(format!(
            "a rank {rank} asked for the id, in a world of {world} whose rank 0 serves it"
        ));
    }
    Ok(Some(rank))
}

#[cfg(test)]
mod tests;
