//! The per-operation work caplab itself does (scheduling, value generation, recording
//! latency) allocates nothing once its buffers have grown: counted by a global allocator
//! that tallies the allocations of the thread that makes them, so tests running beside
//! this one do not disturb the count. (The CQL driver's own per-request allocations are
//! outside this and are measured in bench/RESULTS.md.)

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::{Duration, Instant};

use caplab::engine::Schedule;
use caplab::metrics::Recorder;
use caplab::metrics::recorder::Completion;
use caplab::workload::e1::RowBuf;
use caplab::workload::generate::{ColumnSpec, Generator, Role, Shape, Size, Value};
use scylla::frame::response::result::NativeType;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|a| a.set(a.get() + 1));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|a| a.set(a.get() + 1));
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made by `f` on this thread.
fn allocations(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

fn native(t: NativeType) -> Shape {
    Shape::Native(t)
}

#[test]
fn generating_e1_rows_allocates_nothing() {
    let mut row = RowBuf::new(5, 10);
    row.fill(0, 0);
    let n = allocations(|| {
        for i in 0..100_000u64 {
            row.fill(i % 100_000, i / 7);
            std::hint::black_box(row.column(3));
        }
    });
    assert_eq!(n, 0, "E1 row generation allocated {n} times in 100,000 rows");
}

#[test]
fn profile_generators_allocate_nothing_once_their_buffers_have_grown() {
    let varying = ColumnSpec {
        size: Size::Range { min: 1, max: 200 },
        count: Some(Size::Range { min: 0, max: 12 }),
        ..ColumnSpec::default()
    };
    let shapes = [
        native(NativeType::Text),
        native(NativeType::Blob),
        native(NativeType::Ascii),
        native(NativeType::Int),
        native(NativeType::BigInt),
        native(NativeType::Double),
        native(NativeType::Uuid),
        native(NativeType::Timeuuid),
        native(NativeType::Timestamp),
        native(NativeType::Inet),
        native(NativeType::Varint),
        native(NativeType::Decimal),
        native(NativeType::Date),
        native(NativeType::Time),
        native(NativeType::Boolean),
        native(NativeType::TinyInt),
        native(NativeType::SmallInt),
        native(NativeType::Float),
        native(NativeType::Counter),
        Shape::List(Box::new(native(NativeType::Text))),
        Shape::Set(Box::new(native(NativeType::Int))),
        Shape::Map(Box::new(native(NativeType::Text)), Box::new(native(NativeType::BigInt))),
        Shape::Udt(vec![
            native(NativeType::Text),
            native(NativeType::Int),
            native(NativeType::Double),
        ]),
        Shape::Tuple(vec![
            native(NativeType::Blob),
            Shape::List(Box::new(native(NativeType::Text))),
        ]),
    ];
    for shape in shapes {
        let g = Generator::new("c", varying.clone(), Role::Regular, shape.clone());
        let mut v = Value::Int(0);
        // Warm-up: the buffers grow to the largest size and element count they will need.
        for i in 0..20_000u64 {
            g.render(g.index(i % 1000, i), &mut v);
        }
        let n = allocations(|| {
            for i in 20_000..120_000u64 {
                g.render(g.index(i % 1000, i), &mut v);
                std::hint::black_box(&v);
            }
        });
        assert_eq!(n, 0, "{shape:?} allocated {n} times in 100,000 values");
    }
}

#[test]
fn noting_scheduled_operations_allocates_nothing() {
    let t0 = Instant::now();
    let schedule = Schedule::new(t0, 5000.0);
    let recorder = Recorder::new(4, 2);
    // The slow operations' threshold is zero until a measured interval has closed: every
    // measured operation is offered, and the shards fill and then sample.
    let slow = caplab::metrics::slow::SlowOps::new(t0, 4, 2);
    let n = allocations(|| {
        for i in 0..100_000u64 {
            let intended = schedule.intended(i).unwrap();
            let sent = intended + Duration::from_micros(i % 900);
            let result = if i % 1000 == 0 {
                Err(caplab::metrics::ErrorKind::ClientTimeout)
            } else if i % 1000 == 1 {
                Err(caplab::metrics::ErrorKind::NotSent)
            } else {
                Ok((1, 1))
            };
            let c = Completion {
                op: (i % 2) as usize,
                intended,
                sent: (i % 1000 != 1).then_some(sent),
                done: sent + Duration::from_micros(200 + i % 50_000),
                result,
                measured: i >= 100,
                waited: i % 3 == 0,
            };
            recorder.record((i % 4) as usize, &c);
            slow.offer((i % 4) as usize, &c);
            // Every hundredth as though sent traced (`--trace-slow 1%`).
            if i % 100 == 0 {
                slow.offer_traced((i % 4) as usize, &c, uuid::Uuid::from_u64_pair(i, 1));
            }
        }
    });
    assert_eq!(slow.take().offered, 99_900, "every measured operation was offered");
    assert_eq!(slow.take_traced().offered, 999, "every traced measured one too, apart");
    assert_eq!(
        n, 0,
        "scheduling, recording and keeping slow operations, traced ones too, allocated {n} times in 100,000 operations"
    );
    // A replay's schedule: a captured trace's own start times, 1 to 3 operations a millisecond,
    // looping.
    let counts: Vec<(u64, u64)> = (0..50_000).map(|k| (2 * k, 1 + k % 3)).collect();
    let trace = caplab::engine::Shape::of_times(&counts, 2.0, true, "trace".into()).unwrap();
    let replay = Schedule::shaped(t0, std::sync::Arc::new(trace));
    let n = allocations(|| {
        for i in 0..100_000u64 {
            std::hint::black_box(replay.intended(i));
        }
    });
    assert_eq!(n, 0, "a replay's schedule allocated {n} times in 100,000 operations");
    let mut into: Vec<_> = (0..2).map(|_| caplab::metrics::OpStats::default()).collect();
    recorder.drain_into(&mut into);
    // Of the 100 warm-up operations, the one never sent is not kept.
    assert_eq!(
        into.iter().map(|o| o.ok + o.error_count() + o.warmup_ops).sum::<u64>(),
        99_999
    );
}

#[test]
fn keeping_every_operation_allocates_nothing_once_its_buffers_have_grown() {
    use caplab::metrics::ops::{OpFacts, OpsLog, OpsTarget};
    let dir = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let target = OpsTarget {
        path: dir.path().join("ops.parquet"),
        loader: 1,
    };
    let names = vec!["read".to_string(), "write".to_string()];
    let log = OpsLog::create(
        &target,
        t0,
        std::time::SystemTime::now(),
        names,
        vec!["SELECT".into()],
        4,
    )
    .unwrap();
    let round = |from: u64| {
        for i in from..from + 100_000 {
            let intended = t0 + Duration::from_micros(200 * i);
            log.record(
                (i % 4) as usize,
                &Completion {
                    op: (i % 2) as usize,
                    intended,
                    sent: Some(intended),
                    done: intended + Duration::from_micros(300 + i % 5_000),
                    result: Ok((1, 1)),
                    measured: true,
                    waited: false,
                },
                OpFacts {
                    index: i,
                    partition: Some(i % 1000),
                    token: None,
                    statement: Some(0),
                },
            );
        }
    };
    // The first interval grows the shards' buffers; the writer hands them back emptied.
    round(0);
    log.hand_over();
    let waited = Instant::now();
    while log.spare_buffers() < 4 {
        assert!(
            waited.elapsed() < Duration::from_secs(120),
            "the writer never handed the buffers back"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    log.hand_over();
    let n = allocations(|| round(100_000));
    assert_eq!(
        n, 0,
        "keeping every operation allocated {n} times in 100,000 operations"
    );
    let file = log.finish().unwrap();
    assert_eq!(file.rows, 200_000);
    assert!(std::fs::metadata(&target.path).unwrap().len() > 0);
}
