//! Joining the ranks: the [`UniqueId`] rank 0 makes and shares, and [`Ranks`] as launchers
//! describe them.

use super::NcclError;
use super::runtime::call;
use cudarc::nccl::sys;
use std::path::Path;
use std::time::{Duration, Instant};

/// The id that joins the ranks of one communicator: rank 0 makes it with [`new`](Self::new)
/// and every rank passes it to [`Communicator::init_rank`](super::Communicator::init_rank).
#[derive(Clone, Copy)]
pub struct UniqueId(pub(super) sys::ncclUniqueId);

impl core::fmt::Debug for UniqueId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "UniqueId({})", self.to_hex())
    }
}

impl UniqueId {
    /// A fresh id (`ncclGetUniqueId`), made on rank 0.
    pub fn new() -> Result<Self, NcclError> {
        let mut id = sys::ncclUniqueId { internal: [0; 128] };
        // SAFETY: writes one `ncclUniqueId` through a valid pointer.
        call("ncclGetUniqueId", None, || unsafe { sys::ncclGetUniqueId(&mut id) })?;
        Ok(Self(id))
    }

    /// The id's 128 bytes.
    pub fn to_bytes(&self) -> [u8; 128] {
        self.0.internal.map(|c| c as u8)
    }

    /// The id of 128 bytes made by [`to_bytes`](Self::to_bytes) on another rank.
    pub fn from_bytes(bytes: [u8; 128]) -> Self {
        Self(sys::ncclUniqueId {
            internal: bytes.map(|b| b as core::ffi::c_char),
        })
    }

    /// The id as 256 lowercase hexadecimal digits, to pass in an environment variable or a file.
    pub fn to_hex(&self) -> String {
        self.to_bytes().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The id from [`to_hex`](Self::to_hex)'s text (surrounding whitespace ignored).
    pub fn from_hex(text: &str) -> Result<Self, NcclError> {
        let text = text.trim();
        if text.len() != 256 || !text.is_ascii() {
            return Err(NcclError::UniqueId(format!(
                "expected 256 hexadecimal digits, found {} characters",
                text.chars().count()
            )));
        }
        let mut bytes = [0u8; 128];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = u8::from_str_radix(&text[2 * i..2 * i + 2], 16)
                .map_err(|_| NcclError::UniqueId(format!("{:?} is not hexadecimal", &text[2 * i..2 * i + 2])))?;
        }
        Ok(Self::from_bytes(bytes))
    }

    /// The id in environment variable `name` (as [`to_hex`](Self::to_hex) writes it), set by
    /// whatever started the ranks.
    pub fn from_env(name: &'static str) -> Result<Self, NcclError> {
        let text = std::env::var(name).map_err(|e| NcclError::Env {
            name,
            why: e.to_string(),
        })?;
        Self::from_hex(&text)
    }

    /// Shares an id through a file all ranks can reach: rank 0 makes a fresh id and writes it to
    /// `path` (atomically: written beside it, then renamed); the others wait until it appears,
    /// up to `timeout`. Remove the file before starting the next group with the same path.
    pub fn exchange_file(path: impl AsRef<Path>, rank: usize, timeout: Duration) -> Result<Self, NcclError> {
        let path = path.as_ref();
        let io = |what: &str, e: std::io::Error| NcclError::UniqueId(format!("{what} {}: {e}", path.display()));
        if rank == 0 {
            let id = Self::new()?;
            let mut partial = path.as_os_str().to_owned();
            partial.push(format!(".{}.partial", std::process::id()));
            std::fs::write(&partial, id.to_hex()).map_err(|e| io("writing beside", e))?;
            std::fs::rename(&partial, path).map_err(|e| io("renaming into", e))?;
            return Ok(id);
        }
        let start = Instant::now();
        loop {
            match std::fs::read_to_string(path) {
                Ok(text) => return Self::from_hex(&text),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io("reading", e)),
            }
            if start.elapsed() >= timeout {
                return Err(NcclError::UniqueId(format!(
                    "rank {rank}: {} did not appear within {timeout:?}; is rank 0 running?",
                    path.display()
                )));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// The ranks as a launcher such as torchrun describes them in `RANK`, `WORLD_SIZE` and
/// `LOCAL_RANK`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ranks {
    /// This process's rank.
    pub rank: usize,
    /// The number of ranks.
    pub world_size: usize,
    /// This process's rank on its host: the usual device ordinal.
    pub local_rank: usize,
}

impl Ranks {
    /// Reads `RANK`, `WORLD_SIZE` and `LOCAL_RANK` (`LOCAL_RANK` defaults to `RANK`).
    pub fn from_env() -> Result<Self, NcclError> {
        fn read(name: &'static str) -> Result<Option<usize>, NcclError> {
            match std::env::var(name) {
                Ok(v) => v.trim().parse().map(Some).map_err(|e| NcclError::Env {
                    name,
                    why: format!("{v:?}: {e}"),
                }),
                Err(std::env::VarError::NotPresent) => Ok(None),
                Err(e) => Err(NcclError::Env {
                    name,
                    why: e.to_string(),
                }),
            }
        }
        let missing = |name| NcclError::Env {
            name,
            why: "not set (start the ranks with torchrun or set it)".into(),
        };
        let rank = read("RANK")?.ok_or_else(|| missing("RANK"))?;
        let world_size = read("WORLD_SIZE")?.ok_or_else(|| missing("WORLD_SIZE"))?;
        let local_rank = read("LOCAL_RANK")?.unwrap_or(rank);
        if rank >= world_size || core::ffi::c_int::try_from(world_size).is_err() {
            return Err(NcclError::World {
                rank,
                world: world_size,
            });
        }
        Ok(Self {
            rank,
            world_size,
            local_rank,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_ids_round_trip_through_hex() {
        let bytes: [u8; 128] = core::array::from_fn(|i| (i * 37 + 5) as u8);
        let id = UniqueId::from_bytes(bytes);
        let hex = id.to_hex();
        assert_eq!(hex.len(), 256);
        assert_eq!(UniqueId::from_hex(&format!(" {hex}\n")).unwrap().to_bytes(), bytes);
        assert!(matches!(UniqueId::from_hex("abc"), Err(NcclError::UniqueId(_))));
        let bad = format!("zz{}", &hex[2..]);
        let e = UniqueId::from_hex(&bad).unwrap_err();
        assert!(e.to_string().contains("\"zz\" is not hexadecimal"), "{e}");
        // Multi-byte text of 256 bytes is refused without slicing inside a character.
        let wide = "é".repeat(128);
        assert!(matches!(UniqueId::from_hex(&wide), Err(NcclError::UniqueId(_))));
    }

    #[test]
    fn a_missing_environment_variable_is_named() {
        let e = UniqueId::from_env("DLMD_TEST_VARIABLE_NOBODY_SETS").unwrap_err();
        assert!(
            matches!(
                e,
                NcclError::Env {
                    name: "DLMD_TEST_VARIABLE_NOBODY_SETS",
                    ..
                }
            ),
            "{e}"
        );
    }
}
