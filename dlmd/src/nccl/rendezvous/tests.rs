//! The rendezvous's tests: ids exchanged between threads standing in for ranks, over
//! loopback, and the failures each side names.

use super::*;
use std::env::VarError;

fn id(seed: u8) -> UniqueId {
    UniqueId::from_bytes(core::array::from_fn(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)))
}

/// A listener on a free local port, and the rendezvous that reaches it.
fn local() -> (TcpListener, Rendezvous) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    (listener, Rendezvous::new("127.0.0.1", port))
}

const LONG: Duration = Duration::from_secs(60);
const SHORT: Duration = Duration::from_millis(200);

#[test]
#[cfg_attr(miri, ignore = "Miri has no sockets")]
fn every_rank_gets_rank_0s_id() {
    let (listener, at) = local();
    let world = 8;
    let fetched: Vec<[u8; 128]> = std::thread::scope(|t| {
        // The ranks start asking before rank 0 listens: they retry.
        let ranks: Vec<_> = (1..world)
            .map(|rank| {
                let at = at.clone();
                t.spawn(move || at.fetch(rank, world, LONG).unwrap().to_bytes())
            })
            .collect();
        serve_on(&listener, &at, &id(7), world, LONG).unwrap();
        ranks.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(fetched.len(), world - 1);
    assert!(fetched.iter().all(|b| *b == id(7).to_bytes()));
}

#[test]
#[cfg_attr(miri, ignore = "Miri has no sockets")]
fn a_world_of_one_serves_nobody() {
    let (listener, at) = local();
    serve_on(&listener, &at, &id(1), 1, SHORT).unwrap();
    // Not even a port: this one is taken, and a world of one does not need it.
    at.serve(&id(1), 1, SHORT).unwrap();
    let e = at.serve(&id(1), 2, SHORT).unwrap_err();
    assert!(e.to_string().contains("set DLMD_NCCL_PORT to a free one"), "{e}");
}

#[test]
#[cfg_attr(miri, ignore = "Miri has no sockets")]
fn rank_0_names_the_ranks_that_never_asked() {
    let (listener, at) = local();
    let e = std::thread::scope(|t| {
        let one = t.spawn(|| at.fetch(1, 4, LONG));
        let e = serve_on(&listener, &at, &id(2), 4, SHORT).unwrap_err();
        assert_eq!(one.join().unwrap().unwrap().to_bytes(), id(2).to_bytes());
        e
    });
    let text = e.to_string();
    assert!(matches!(e, NcclError::Rendezvous { .. }), "{e}");
    assert!(text.contains("ranks [2, 3] did not ask"), "{text}");
    assert!(text.contains(&at.to_string()), "{text}");
}

#[test]
#[cfg_attr(miri, ignore = "Miri has no sockets")]
fn a_rank_without_rank_0_times_out_naming_the_address() {
    // A port that was free a moment ago: nobody listens there.
    let (listener, at) = local();
    drop(listener);
    let e = at.fetch(3, 4, SHORT).unwrap_err();
    let text = e.to_string();
    assert!(text.contains("rank 3: no id from rank 0 within"), "{text}");
    assert!(text.contains(&at.to_string()), "{text}");
}

#[test]
#[cfg_attr(miri, ignore = "Miri has no sockets")]
fn strangers_are_dropped_and_rank_0_keeps_serving() {
    let (listener, at) = local();
    let addr = listener.local_addr().unwrap();
    std::thread::scope(|t| {
        t.spawn(move || {
            // A connection that says nothing, one that speaks another protocol, one that
            // closes early; then the real rank.
            let silent = TcpStream::connect(addr).unwrap();
            let mut http = TcpStream::connect(addr).unwrap();
            http.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
            let mut short = TcpStream::connect(addr).unwrap();
            short.write_all(&MAGIC[..4]).unwrap();
            drop(short);
            drop(silent);
        });
        let rank = t.spawn(|| at.fetch(1, 2, LONG).unwrap());
        serve_on(&listener, &at, &id(3), 2, LONG).unwrap();
        assert_eq!(rank.join().unwrap().to_bytes(), id(3).to_bytes());
    });
}

#[test]
#[cfg_attr(miri, ignore = "Miri has no sockets")]
fn a_rank_of_another_world_fails_both_sides() {
    let (listener, at) = local();
    std::thread::scope(|t| {
        let rank = t.spawn(|| at.fetch(1, 3, LONG));
        let e = serve_on(&listener, &at, &id(4), 2, LONG).unwrap_err();
        assert!(
            e.to_string()
                .contains("rank 1 was started with a world of 3, rank 0 with 2"),
            "{e}"
        );
        drop(listener);
        let e = rank.join().unwrap().unwrap_err();
        assert!(e.to_string().contains("closed the connection without an id"), "{e}");
    });
}

#[test]
#[cfg_attr(miri, ignore = "Miri has no sockets")]
fn an_answer_that_is_not_an_id_is_refused() {
    let (listener, at) = local();
    std::thread::scope(|t| {
        t.spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut ask = [0u8; ASK];
            s.read_exact(&mut ask).unwrap();
            s.write_all(&[b'x'; ANSWER]).unwrap();
        });
        let e = at.fetch(1, 2, LONG).unwrap_err();
        assert!(e.to_string().contains("not a dlmd NCCL id"), "{e}");
    });
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config {
        cases: if cfg!(miri) { 24 } else { 1000 },
        failure_persistence: None,
        .. proptest::test_runner::Config::default()
    })]

    /// Any 20 bytes from the network: a rank of this world, a stranger, or a named error;
    /// never a panic.
    #[test]
    fn any_ask_is_a_rank_a_stranger_or_an_error(
        ask in proptest::array::uniform20(proptest::num::u8::ANY),
        magic in proptest::bool::ANY,
        world in 1usize..300,
    ) {
        let mut ask = ask;
        if magic {
            ask[..8].copy_from_slice(&MAGIC);
        }
        match parse_ask(&ask, world) {
            Ok(Some(rank)) => proptest::prop_assert!(magic && (1..world).contains(&rank)),
            Ok(None) => proptest::prop_assert!(ask[..8] != MAGIC),
            Err(why) => proptest::prop_assert!(!why.is_empty()),
        }
    }
}

#[test]
fn asks_are_read_field_by_field() {
    let ask = |version: u32, rank: u32, world: u32| {
        let mut a = [0u8; ASK];
        a[..8].copy_from_slice(&MAGIC);
        a[8..12].copy_from_slice(&version.to_le_bytes());
        a[12..16].copy_from_slice(&rank.to_le_bytes());
        a[16..20].copy_from_slice(&world.to_le_bytes());
        a
    };
    assert_eq!(parse_ask(&ask(1, 3, 4), 4), Ok(Some(3)));
    assert!(parse_ask(&ask(2, 3, 4), 4).unwrap_err().contains("version 2"));
    assert!(parse_ask(&ask(1, 0, 4), 4).unwrap_err().contains("a rank 0 asked"));
    assert!(parse_ask(&ask(1, 4, 4), 4).unwrap_err().contains("a rank 4 asked"));
    assert!(
        parse_ask(&ask(1, 3, 8), 4)
            .unwrap_err()
            .contains("world of 8, rank 0 with 4")
    );
    assert_eq!(parse_ask(&[b'G'; ASK], 4), Ok(None));
}

#[test]
fn ranks_outside_the_world_are_refused_before_connecting() {
    let at = Rendezvous::new("127.0.0.1", 1);
    assert!(matches!(
        at.fetch(4, 4, SHORT),
        Err(NcclError::World { rank: 4, world: 4 })
    ));
    assert!(matches!(at.fetch(0, 4, SHORT), Err(NcclError::Rendezvous { .. })));
    assert!(matches!(
        at.serve(&id(0), 0, SHORT),
        Err(NcclError::World { rank: 0, world: 0 })
    ));
}

#[test]
fn world_sizes_past_nccls_are_refused_before_anything_is_allocated() {
    let at = Rendezvous::new("127.0.0.1", 1);
    let huge = 4_000_000_000usize;
    assert!(matches!(
        at.serve(&id(0), huge, SHORT),
        Err(NcclError::World {
            rank: 0,
            world: 4_000_000_000
        })
    ));
    assert!(matches!(
        at.fetch(1, huge, SHORT),
        Err(NcclError::World { rank: 1, .. })
    ));
    let too_many = core::ffi::c_int::MAX as usize + 1;
    assert!(matches!(at.exchange(0, too_many, SHORT), Err(NcclError::World { .. })));
}

#[test]
fn the_launchers_variables() {
    let vars = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &'static str| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
                .ok_or(VarError::NotPresent)
        }
    };
    let at = Rendezvous::from_lookup(vars(&[("MASTER_ADDR", "node0"), ("MASTER_PORT", "29500")])).unwrap();
    assert_eq!(at, Rendezvous::new("node0", 29501));
    let at = Rendezvous::from_lookup(vars(&[
        ("MASTER_ADDR", "::1"),
        ("MASTER_PORT", "29500"),
        ("DLMD_NCCL_PORT", " 4000 "),
    ]))
    .unwrap();
    assert_eq!(
        (at.host(), at.port(), at.to_string().as_str()),
        ("::1", 4000, "[::1]:4000")
    );
    let e = Rendezvous::from_lookup(vars(&[("MASTER_PORT", "29500")])).unwrap_err();
    assert!(
        matches!(
            e,
            NcclError::Env {
                name: "MASTER_ADDR",
                ..
            }
        ),
        "{e}"
    );
    let e = Rendezvous::from_lookup(vars(&[("MASTER_ADDR", "a")])).unwrap_err();
    assert!(
        matches!(
            e,
            NcclError::Env {
                name: "MASTER_PORT",
                ..
            }
        ),
        "{e}"
    );
    let e = Rendezvous::from_lookup(vars(&[("MASTER_ADDR", "a"), ("MASTER_PORT", "http")])).unwrap_err();
    assert!(e.to_string().contains("\"http\" is not a port"), "{e}");
    let e = Rendezvous::from_lookup(vars(&[("MASTER_ADDR", "a"), ("MASTER_PORT", "65535")])).unwrap_err();
    assert!(e.to_string().contains("set DLMD_NCCL_PORT"), "{e}");
    let e = Rendezvous::from_lookup(vars(&[("MASTER_ADDR", "a"), ("DLMD_NCCL_PORT", "70000")])).unwrap_err();
    assert!(
        matches!(
            e,
            NcclError::Env {
                name: "DLMD_NCCL_PORT",
                ..
            }
        ),
        "{e}"
    );
}
