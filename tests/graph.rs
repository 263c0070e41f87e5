//! Graphs (`Device::capture`) on every backend: launches captured once run, in order, at each
//! replay and not before; what a graph cannot hold is refused while capturing.

use kernel_runtime::{Error, LaunchConfig};
use kernel_suite::test_kernels::{times_three_plus, NEVER_SET};

mod common;
use common::backends;

/// `x * 3 + by`, `steps` times, for each `by` of `bys` in turn.
fn expected(start: u32, bys: &[u32], rounds: usize) -> u32 {
    let mut x = start;
    for _ in 0..rounds {
        for &by in bys {
            x = x.wrapping_mul(3).wrapping_add(by);
        }
    }
    x
}

#[test]
fn a_graph_runs_its_launches_in_order_at_each_replay() {
    let start: Vec<u32> = (0..1000).collect();
    let bys = [1u32, 7, 2, 9, 4];
    for dev in backends() {
        let mut x = dev.to_device(&start).unwrap();
        let mut graph = dev
            .capture(|| {
                for by in bys {
                    times_three_plus.launch(4, 256, (&mut x, by))?;
                }
                Ok(())
            })
            .unwrap();
        graph.launch().unwrap();
        graph.launch().unwrap();
        graph.launch().unwrap();
        drop(graph);
        let want: Vec<u32> = start.iter().map(|&s| expected(s, &bys, 3)).collect();
        assert_eq!(x.to_vec().unwrap(), want, "{:?}", dev.kind());
    }
}

#[test]
fn capturing_runs_nothing() {
    for dev in backends() {
        let mut x = dev.zeros::<u32, _>(64).unwrap();
        let graph = dev
            .capture(|| times_three_plus.launch(1, 64, (&mut x, 5)))
            .unwrap();
        drop(graph);
        assert_eq!(x.to_vec().unwrap(), vec![0; 64], "{:?}", dev.kind());
    }
}

#[test]
fn allocating_copying_or_waiting_in_a_graph_is_refused_on_every_backend() {
    for dev in backends() {
        let x = dev.zeros::<u32, _>(8).unwrap();
        // A GPU refuses them while capturing; the CPU backend, whose graph runs its work at
        // each replay, while replaying.
        let refused = |result: Result<kernel_runtime::Graph<'_>, Error>| {
            let err = result.and_then(|mut g| g.launch()).unwrap_err();
            assert!(
                matches!(err, Error::InCapture { .. }),
                "{:?}: {err}",
                dev.kind()
            );
            assert!(
                err.to_string()
                    .contains("before or after `Device::capture`"),
                "{err}"
            );
        };
        refused(dev.capture(|| dev.zeros::<u32, _>(8).map(drop)));
        refused(dev.capture(|| x.to_vec().map(drop)));
        refused(dev.capture(|| dev.synchronize()));
        // Module arrays are copied, and a stream of its own is not the capture's.
        refused(dev.capture(|| NEVER_SET.to_vec(&dev).map(drop)));
        refused(dev.capture(|| NEVER_SET.set(&dev, &[0.0; 3])));
        let stream = dev.stream().unwrap();
        let mut y = dev.zeros::<u32, _>(8).unwrap();
        refused(dev.capture(|| {
            let config = LaunchConfig::new(1, 8)?.on_stream(&stream);
            times_three_plus.launch_with(config, (&mut y, 1))
        }));
        // The capture ended: the device works as before.
        assert_eq!(x.to_vec().unwrap(), vec![0; 8], "{:?}", dev.kind());
    }
}

#[test]
fn an_error_in_the_captured_work_is_the_captures_error() {
    for dev in backends() {
        let mut x = dev.zeros::<u32, _>(8).unwrap();
        let err = dev
            .capture(|| times_three_plus.launch(1, 4096, (&mut x, 1)))
            .and_then(|mut g| g.launch())
            .unwrap_err();
        assert!(matches!(err, Error::InvalidLaunch { .. }), "{err}");
    }
}
