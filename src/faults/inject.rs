//! Applying a fault schedule to the nodes caplab runs here, while a step runs: each fault waits
//! for its time after the measured window's start, is applied, and is undone after its length.
//! Whatever ends the step (its end, Ctrl-C, SIGTERM, an error), `undo` leaves no node paused,
//! stopped, killed or drained; a forced exit (a second signal) still resumes paused nodes
//! (`resume_paused`), and says which nodes to start again.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::impact::Happened;
use super::proxy::{Proxy, Toxic};
use super::spec::{Action, FaultSpec};
use crate::cluster::Home;
use crate::cluster::local::{self, StartOptions, StopOptions};
use crate::cluster::node::{Liveness, NodeState};
use crate::cluster::nodetool;
use crate::console::say;

/// Pids this process has paused and not resumed (what a forced exit resumes).
static PAUSED: Mutex<Vec<u32>> = Mutex::new(Vec::new());

fn paused() -> std::sync::MutexGuard<'static, Vec<u32>> {
    lock(&PAUSED)
}

/// Resumes every node this process paused (SIGCONT). Cheap and safe to call at any exit.
pub fn resume_paused() {
    for pid in paused().drain(..) {
        let _ = kill(Pid::from_raw(pid as i32), Signal::SIGCONT);
    }
}

/// What a fault left a node in, until it is undone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Left {
    Paused(u32),
    Down,
    Drained,
    /// Drained and stopped by upgrade fault i, to start on its version.
    Upgrading(usize),
    /// Its proxy carries a toxic.
    Network,
}

/// One fault's times, on the wall clock.
#[derive(Debug, Clone, Default)]
struct Times {
    due: Option<SystemTime>,
    began: Option<SystemTime>,
    ended: Option<SystemTime>,
    back: Option<SystemTime>,
    error: Option<String>,
}

/// A fault schedule being applied.
pub struct Injector {
    home: Home,
    faults: Vec<FaultSpec>,
    times: Mutex<Vec<Times>>,
    left: Mutex<BTreeMap<String, Left>>,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// A proxy per local node, by name (only when the schedule has a network fault).
    proxies: Mutex<BTreeMap<String, Arc<Proxy>>>,
    /// Blocking actions under way (a stop, a start): `undo` waits for them, as aborting a
    /// task does not stop its blocking work.
    busy: std::sync::atomic::AtomicUsize,
    /// Held by the upgrade under way, from its start until its node is back.
    upgrades: tokio::sync::Mutex<()>,
}

/// Ends a blocking action's count (`Injector::blocking`) when dropped.
struct Busy<'a>(&'a std::sync::atomic::AtomicUsize);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Injector {
    pub fn new(home: Home, faults: Vec<FaultSpec>) -> Arc<Injector> {
        let n = faults.len();
        Arc::new(Injector {
            home,
            faults,
            times: Mutex::new(vec![Times::default(); n]),
            left: Mutex::new(BTreeMap::new()),
            tasks: Mutex::new(Vec::new()),
            proxies: Mutex::new(BTreeMap::new()),
            busy: std::sync::atomic::AtomicUsize::new(0),
            upgrades: tokio::sync::Mutex::new(()),
        })
    }

    /// The same schedule for another step (of a capacity search): its own times, the same
    /// proxies (the client reaches the nodes through them for the whole search).
    pub fn for_step(&self) -> Arc<Injector> {
        let next = Injector::new(self.home.clone(), self.faults.clone());
        lock(&next.proxies).clone_from(&lock(&self.proxies));
        next
    }

    pub fn faults(&self) -> &[FaultSpec] {
        &self.faults
    }

    /// Whether the schedule has a network fault (the driver must then reach the nodes through
    /// proxies).
    pub fn has_network(&self) -> bool {
        self.faults.iter().any(|f| f.action.is_network())
    }

    /// Starts a proxy in front of each of `nodes`' CQL port; returns (node address, proxy
    /// address) for the driver to go through.
    pub async fn start_proxies(
        &self,
        nodes: &[NodeState],
    ) -> anyhow::Result<Vec<(std::net::SocketAddr, std::net::SocketAddr)>> {
        let mut routes = Vec::new();
        for n in nodes {
            let p = Proxy::start(n.cql_addr())
                .await
                .map_err(|e| anyhow::anyhow!("cannot start the network-fault proxy for {}: {e}", n.name))?;
            routes.push((p.target, p.listen));
            lock(&self.proxies).insert(n.name.clone(), Arc::new(p));
        }
        Ok(routes)
    }

    fn proxy(&self, name: &str) -> anyhow::Result<Arc<Proxy>> {
        lock(&self.proxies)
            .get(name)
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("no proxy in front of {name}"))
    }

    /// Starts every fault's task: each waits for the measured window's start (sent on
    /// `window`), then for its time.
    pub fn start(self: &Arc<Self>, window: tokio::sync::watch::Receiver<Option<SystemTime>>) {
        let mut tasks = lock(&self.tasks);
        for i in 0..self.faults.len() {
            let (me, mut window) = (self.clone(), window.clone());
            tasks.push(tokio::spawn(async move {
                let Ok(start) = window.wait_for(Option::is_some).await.map(|w| w.expect("some")) else {
                    return;
                };
                me.run(i, start).await;
            }));
        }
    }

    async fn run(self: Arc<Self>, i: usize, window_start: SystemTime) {
        let f = self.faults[i].clone();
        self.set(i, |t| t.due = Some(window_start + f.at));
        sleep_until(window_start + f.at).await;
        // Upgrades go one node at a time: one whose time comes while another is under way waits
        // until that node is back (and begins then).
        let _turn = match f.action {
            Action::Upgrade => Some(match self.upgrades.try_lock() {
                Ok(turn) => turn,
                Err(_) => {
                    say(&format!("Fault: {} waits for the upgrade under way", f.text));
                    self.upgrades.lock().await
                }
            }),
            _ => None,
        };
        let began = SystemTime::now();
        self.set(i, |t| t.began = Some(began));
        say(&format!("Fault: {} (now)", f.text));
        let applied = self.blocking(move |me| me.apply(&f)).await;
        if let Err(e) = applied
            .map_err(|e| e.to_string())
            .and_then(|r| r.map_err(|e| format!("{e:#}")))
        {
            say(&format!("Fault '{}' could not be applied: {e}", self.faults[i].text));
            self.set(i, |t| t.error = Some(e));
            return;
        }
        let f = self.faults[i].clone();
        let until = match (f.action, f.length) {
            (Action::Reset, _) => {
                self.set(i, |t| t.ended = Some(began));
                return;
            }
            (Action::Restart | Action::Upgrade, _) => None,
            (_, Some(d)) => Some(began + d),
            (_, None) => return,
        };
        if let Some(until) = until {
            sleep_until(until).await;
        }
        // A restart or an upgrade lasts until its node is back; any other fault until undone.
        let instant = until.is_none();
        if !instant {
            self.set(i, |t| t.ended = Some(SystemTime::now()));
        }
        let node = f.node.clone();
        match self.blocking(move |me| me.undo_node(&node)).await {
            Ok(Ok(back)) => self.set(i, |t| {
                t.back = back;
                if instant {
                    t.ended = Some(back.unwrap_or_else(SystemTime::now));
                }
            }),
            Ok(Err(e)) => self.set(i, |t| t.error = Some(format!("undoing it: {e:#}"))),
            Err(e) => self.set(i, |t| t.error = Some(format!("undoing it: {e}"))),
        }
    }

    /// Runs `f` on a blocking thread, counted as under way from now (before any await, so an
    /// aborted task's action is still counted) until it returns.
    async fn blocking<T: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&Injector) -> T + Send + 'static,
    ) -> Result<T, tokio::task::JoinError> {
        self.busy.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let me = self.clone();
        tokio::task::spawn_blocking(move || {
            let _done = Busy(&me.busy);
            f(&me)
        })
        .await
    }

    fn set(&self, i: usize, f: impl FnOnce(&mut Times)) {
        f(&mut lock(&self.times)[i]);
    }

    fn node(&self, name: &str) -> anyhow::Result<NodeState> {
        local::select(&self.home, &[name.to_string()])?
            .into_iter()
            .next()
            .ok_or_else(|| anyhow::anyhow!("no node {name}"))
    }

    /// Applies `f` (blocking: stops and drains take seconds).
    fn apply(&self, f: &FaultSpec) -> anyhow::Result<()> {
        if f.action.is_network() {
            let proxy = self.proxy(&f.node)?;
            let toxic = match f.action {
                Action::Delay => Toxic::Delay {
                    latency: f.latency.unwrap_or_default(),
                    jitter: f.jitter.unwrap_or_default(),
                },
                Action::Bandwidth => Toxic::Bandwidth {
                    bytes_per_s: f.bytes_per_s.unwrap_or(1),
                },
                Action::Blackhole => Toxic::Blackhole,
                _ => {
                    proxy.reset();
                    return Ok(());
                }
            };
            proxy.set(toxic);
            lock(&self.left).insert(f.node.clone(), Left::Network);
            return Ok(());
        }
        let node = self.node(&f.node)?;
        let pid = node
            .pid
            .filter(|_| node.liveness() == Liveness::Running)
            .ok_or_else(|| anyhow::anyhow!("{} is not running", f.node))?;
        let left = match f.action {
            Action::Pause => {
                paused().push(pid);
                kill(Pid::from_raw(pid as i32), Signal::SIGSTOP)?;
                Left::Paused(pid)
            }
            Action::Kill => {
                kill(Pid::from_raw(pid as i32), Signal::SIGKILL)?;
                local::wait_gone(pid, &node, Duration::from_secs(10));
                Left::Down
            }
            Action::Stop | Action::Restart => {
                stop_now(&node)?;
                Left::Down
            }
            Action::Drain => {
                nodetool::run(&node, &["drain"], Duration::from_secs(120))?;
                Left::Drained
            }
            Action::Upgrade => {
                let i = self
                    .faults
                    .iter()
                    .position(|g| g == f)
                    .expect("a fault of this schedule");
                nodetool::run(&node, &["drain"], Duration::from_secs(120))?;
                stop_now(&node)?;
                Left::Upgrading(i)
            }
            Action::Delay | Action::Bandwidth | Action::Blackhole | Action::Reset => {
                unreachable!("network faults above")
            }
        };
        lock(&self.left).insert(f.node.clone(), left);
        Ok(())
    }

    /// Undoes what a fault left `name` in; returns when it answered CQL again (for a node that
    /// was started again).
    fn undo_node(&self, name: &str) -> anyhow::Result<Option<SystemTime>> {
        let left = lock(&self.left).remove(name);
        match left {
            None => Ok(None),
            Some(Left::Paused(pid)) => {
                kill(Pid::from_raw(pid as i32), Signal::SIGCONT)?;
                paused().retain(|p| *p != pid);
                Ok(None)
            }
            Some(Left::Drained) => {
                let node = self.node(name)?;
                stop_now(&node)?;
                self.start_again(name)
            }
            Some(Left::Down) => self.start_again(name),
            Some(Left::Upgrading(i)) => {
                let node = self.node(name)?;
                let mut spec = node.spec.clone();
                spec.version = self.faults[i].version.clone().expect("an upgrade has its version");
                say(&format!("Upgrade: starting {name} on Cassandra {}", spec.version));
                local::start_one(&self.home, &spec, node.index, &mut |m| say(m))?;
                Ok(Some(SystemTime::now()))
            }
            Some(Left::Network) => {
                self.proxy(name)?.set(Toxic::None);
                Ok(None)
            }
        }
    }

    fn start_again(&self, name: &str) -> anyhow::Result<Option<SystemTime>> {
        let node = self.node(name)?;
        say(&format!("Fault over: starting {name} again"));
        local::start(&self.home, &node.spec, StartOptions::default(), &mut |m| say(m))?;
        Ok(Some(SystemTime::now()))
    }

    /// Stops the schedule and undoes every fault still in effect (blocking: a node killed or
    /// stopped is started again). Nodes that cannot be brought back are named.
    pub fn undo(&self) {
        for t in lock(&self.tasks).drain(..) {
            t.abort();
        }
        resume_paused();
        for p in lock(&self.proxies).values() {
            p.set(Toxic::None);
        }
        // A stop or start under way finishes first (what it leaves is undone below).
        let begin = std::time::Instant::now();
        while self.busy.load(std::sync::atomic::Ordering::SeqCst) > 0 && begin.elapsed() < Duration::from_secs(300) {
            std::thread::sleep(Duration::from_millis(100));
        }
        let names: Vec<String> = lock(&self.left).keys().cloned().collect();
        for name in names {
            // Faults cut short by the end: their undoing is their end.
            for (i, f) in self.faults.iter().enumerate() {
                let mut times = lock(&self.times);
                if f.node == name && times[i].began.is_some() && times[i].ended.is_none() {
                    times[i].ended = Some(SystemTime::now());
                }
            }
            if let Err(e) = self.undo_node(&name) {
                say(&format!(
                    "Could not undo the fault on {name}: {e:#}. Start it with 'caplab node start' (same options)"
                ));
            }
        }
    }

    /// What happened to each fault: (spec, action, node, times from `anchor` in seconds).
    pub fn happened(&self, anchor: SystemTime) -> Vec<(String, Action, String, Happened)> {
        let s = |t: Option<SystemTime>| t.map(|t| t.duration_since(anchor).unwrap_or_default().as_secs_f64());
        let times = lock(&self.times);
        self.faults
            .iter()
            .zip(times.iter())
            .map(|(f, t)| {
                (
                    f.text.clone(),
                    f.action,
                    f.node.clone(),
                    Happened {
                        due_s: s(t.due),
                        began_s: s(t.began),
                        ended_s: s(t.ended),
                        back_s: s(t.back),
                        error: t.error.clone(),
                    },
                )
            })
            .collect()
    }
}

/// A graceful stop without a drain (SIGTERM, SIGKILL after 60 s).
fn stop_now(node: &NodeState) -> anyhow::Result<()> {
    local::stop(
        std::slice::from_ref(node),
        StopOptions {
            drain: false,
            timeout: Duration::from_secs(60),
        },
        &mut |m| say(m),
    )
}

/// A lock, whatever a panicking holder left (the data are plain records).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

async fn sleep_until(t: SystemTime) {
    if let Ok(wait) = t.duration_since(SystemTime::now()) {
        tokio::time::sleep(wait).await;
    }
}

/// Undoes a schedule's faults when a step ends: awaited (`now`) on the way out, or on drop when
/// the step ends by an error.
pub struct UndoFaults(Option<Arc<Injector>>);

impl UndoFaults {
    pub fn of(injector: Arc<Injector>) -> UndoFaults {
        UndoFaults(Some(injector))
    }

    pub async fn now(mut self) -> anyhow::Result<()> {
        if let Some(i) = self.0.take() {
            tokio::task::spawn_blocking(move || i.undo()).await?;
        }
        Ok(())
    }
}

impl Drop for UndoFaults {
    fn drop(&mut self) {
        if let Some(i) = self.0.take() {
            i.undo();
        }
    }
}
