//! A configuration search that confirms its winner (`caplab tune`): how many candidates each
//! stage of the search measures and for how long, which of them go on, and what the
//! confirmation decides.
//!
//! The search is successive halving (Jamieson & Talwalkar 2016, the inner loop of Hyperband):
//! every candidate is measured once at the cheapest fidelity (a short probe), the best 1/`eta`
//! go on to measurements `eta` times as long, and so on until `finalists` remain. Its figures
//! only pick: the best of many noisy measurements overstates itself (the optimizer's curse; TUNA,
//! EuroSys'25, found tuners' picks losing 30 % once deployed). The finalists are then measured
//! again, fresh, against the baseline in randomized blocks, each compared with `sequential`'s
//! looks (the error shared by the finalists), and only that stage's intervals are reported.
//!
//! The answer (`answer`): the finalist decided better than the baseline by more than the band
//! with the largest ratio; "nothing beats the baseline by the effect" when every finalist is
//! decided equivalent, worse, or better within the band; else open. The simulations of tune_sim.rs
//! (this project's measured noise: rounds spreading 9–25 %, one measurement in ten GC-paused)
//! prove its error rates and set them beside "best of single runs".

use super::ratio;
use super::sequential::{Decision, Design, Look, look};

/// One stage of the search: how many candidates it measures, and how long each (in probes: a
/// stage of fidelity 3 measures each candidate three times as long as the first stage).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stage {
    pub candidates: usize,
    pub fidelity: usize,
}

/// The stages of successive halving over `n` candidates, keeping the best 1/`eta` (rounded up)
/// each time, until no more than `finalists` are left; the fidelity grows `eta` times a stage.
/// No stage when `n` is already no more than `finalists`: they all go to the confirmation.
pub fn stages(n: usize, eta: usize, finalists: usize) -> Vec<Stage> {
    let (eta, finalists) = (eta.max(2), finalists.max(1));
    let (mut out, mut left, mut fidelity) = (Vec::new(), n, 1);
    while left > finalists {
        out.push(Stage {
            candidates: left,
            fidelity,
        });
        left = left.div_ceil(eta).max(finalists);
        fidelity *= eta;
    }
    out
}

/// How many of a stage's candidates go on: the next stage's size, or the finalists after the
/// last stage.
pub fn going_on(stages: &[Stage], at: usize, finalists: usize) -> usize {
    stages.get(at + 1).map_or(finalists, |s| s.candidates)
}

/// The search's cost in probes (candidates × fidelity, summed).
pub fn cost(stages: &[Stage]) -> usize {
    stages.iter().map(|s| s.candidates * s.fidelity).sum()
}

/// The weight of a measurement at `fidelity` in its candidate's score (the precision-weighted
/// mean of the logs of all its measurements so far): the inverse of its variance, relative to a
/// full measurement's own, when a probe (fidelity 1) spreads `probe` times as much and every
/// measurement also carries a level of the machine's at that time, of a full one's own spread.
/// Weighed so, the search lost a far better candidate in 11 % of simulated spaces, against 18.5 %
/// ranked on each candidate's last measurement (bench/results/tune.md).
pub fn precision(fidelity: usize, probe: f64) -> f64 {
    1.0 / (2.0 + (probe * probe - 1.0) / fidelity.max(1) as f64)
}

/// The indices of the `keep` best of `scores` (higher better; ties to the earlier), best first.
/// A score that is not a number (an infeasible candidate) is never kept.
pub fn best(scores: &[f64], keep: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).filter(|&i| scores[i].is_finite()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    order.truncate(keep);
    order
}

/// How the confirmation decides: its looks, the smallest difference that matters, and which way
/// is better.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Confirmation {
    pub design: Design,
    pub effect: f64,
    pub higher_is_better: bool,
}

impl Confirmation {
    /// `finalists` compared with the baseline, all sharing `alpha`, looked at after rounds
    /// `min..=max`.
    pub fn new(alpha: f64, finalists: usize, min: usize, max: usize, effect: f64, higher_is_better: bool) -> Self {
        Confirmation {
            design: Design::new(alpha, finalists, min, max),
            effect,
            higher_is_better,
        }
    }

    /// The looks after the rounds so far (each round: the baseline's figure, then each
    /// finalist's), given the last looks (`before`, empty at first): a decided finalist keeps its
    /// decision and interval; an open one is looked at again. None for a finalist until it can be.
    pub fn looks(&self, rounds: &[Vec<f64>], before: &[Option<Look>]) -> Vec<Option<Look>> {
        let finalists = rounds.first().map_or(before.len(), |r| r.len() - 1);
        (0..finalists)
            .map(|j| {
                let kept = before.get(j).copied().flatten();
                if kept.is_some_and(|l| l.decision.decided()) {
                    return kept;
                }
                let pairs: Vec<(f64, f64)> = rounds.iter().map(|r| (r[0], r[j + 1])).collect();
                let est = ratio::paired(&pairs, None)?;
                Some(look(
                    &self.design,
                    rounds.len(),
                    &est,
                    self.effect,
                    self.higher_is_better,
                ))
            })
            .collect()
    }

    /// Whether another round could change the answer: rounds left, and some finalist open that
    /// could still beat the answer. Once one is recommended, an open finalist whose interval
    /// reaches no further than the recommended one's ratio could not overtake it, and is left
    /// open.
    pub fn goes_on(&self, rounds: usize, looks: &[Option<Look>]) -> bool {
        if rounds < self.design.min {
            return true;
        }
        if rounds >= self.design.max {
            return false;
        }
        let leader = match answer(looks, self.higher_is_better) {
            Answer::Recommend(_, l) => Some(l.ratio),
            _ => None,
        };
        looks.iter().any(|l| match l {
            None => true,
            Some(l) if l.decision.decided() => false,
            Some(l) => leader.is_none_or(|r| if self.higher_is_better { l.ci.1 > r } else { l.ci.0 < r }),
        })
    }
}

/// What a search and its confirmation came to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Answer {
    /// This finalist (index among the finalists) is better than the baseline by more than the
    /// band, with the confirmation's look.
    Recommend(usize, Look),
    /// Every finalist decided: none better than the baseline by more than the effect.
    NothingBetter,
    /// Not decided.
    Open,
}

/// The answer from the confirmation's last looks: of the finalists decided better and not
/// within the band, the one whose ratio is best.
pub fn answer(looks: &[Option<Look>], higher_is_better: bool) -> Answer {
    let better = looks
        .iter()
        .enumerate()
        .filter_map(|(i, l)| l.map(|l| (i, l)))
        .filter(|(_, l)| l.decision == Decision::Better && !l.within_band)
        .max_by(|a, b| {
            let (x, y) = (a.1.ratio, b.1.ratio);
            if higher_is_better {
                x.total_cmp(&y)
            } else {
                y.total_cmp(&x)
            }
        });
    match better {
        Some((i, l)) => Answer::Recommend(i, l),
        None if looks.iter().all(|l| l.is_some_and(|l| l.decision.decided())) => Answer::NothingBetter,
        None => Answer::Open,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halving_keeps_a_third_until_the_finalists_are_left() {
        let s = |c, f| Stage {
            candidates: c,
            fidelity: f,
        };
        assert_eq!(stages(27, 3, 3), [s(27, 1), s(9, 3)]);
        assert_eq!(cost(&stages(27, 3, 3)), 54);
        assert_eq!(stages(28, 3, 3), [s(28, 1), s(10, 3), s(4, 9)]);
        assert_eq!(
            going_on(&stages(28, 3, 3), 2, 3),
            3,
            "the last stage leaves the finalists"
        );
        assert!(
            stages(3, 3, 3).is_empty(),
            "three candidates go straight to the confirmation"
        );
        assert_eq!(stages(5, 3, 3), [s(5, 1)]);
    }

    #[test]
    fn the_best_are_kept_and_an_infeasible_candidate_never() {
        assert_eq!(best(&[1.0, f64::NAN, 3.0, 2.0, 3.0], 3), [2, 4, 3]);
        assert_eq!(best(&[f64::NAN, 1.0], 5), [1]);
    }

    fn at(decision: Decision, ratio: f64, within_band: bool) -> Option<Look> {
        Some(Look {
            decision,
            ratio,
            ci: (ratio * 0.9, ratio * 1.1),
            alpha: 0.01,
            within_band,
        })
    }

    #[test]
    fn the_answer_is_the_best_finalist_decided_better_beyond_the_band() {
        use Decision::*;
        let looks = [at(Better, 1.2, false), at(Better, 1.4, false), at(Open, 1.6, false)];
        assert!(matches!(answer(&looks, true), Answer::Recommend(1, _)));
        // Lower is better (CPU per operation, p99.9): the smallest ratio.
        let looks = [at(Better, 0.8, false), at(Better, 0.7, false)];
        assert!(matches!(answer(&looks, false), Answer::Recommend(1, _)));
        // Better within the band is real and smaller than what matters: nothing beats the
        // baseline by the effect.
        let looks = [
            at(Better, 1.02, true),
            at(Equivalent, 1.0, false),
            at(Worse, 0.7, false),
        ];
        assert_eq!(answer(&looks, true), Answer::NothingBetter);
        let looks = [at(Equivalent, 1.0, false), at(Open, 1.1, false)];
        assert_eq!(answer(&looks, true), Answer::Open);
        assert_eq!(answer(&[at(Equivalent, 1.0, false), None], true), Answer::Open);
    }

    #[test]
    fn a_decided_finalist_keeps_its_look_and_the_rounds_end_when_all_are() {
        let c = Confirmation::new(0.05, 2, 3, 6, 0.05, true);
        // The first finalist far better every round, the second the same as the baseline.
        let round = |i: usize| vec![1.0, 2.0 + 0.01 * i as f64, 1.0 + 0.001 * (i % 2) as f64];
        let mut rounds = Vec::new();
        let mut looks = Vec::new();
        while c.goes_on(rounds.len(), &looks) {
            rounds.push(round(rounds.len()));
            looks = c.looks(&rounds, &looks);
        }
        assert_eq!(rounds.len(), 3, "both decided at the first look: {looks:?}");
        assert_eq!(looks[0].unwrap().decision, Decision::Better);
        assert_eq!(looks[1].unwrap().decision, Decision::Equivalent);
        // Looked at again, a decided look is not recomputed.
        let first = looks[0];
        rounds.push(vec![1.0, 0.5, 1.0]);
        assert_eq!(c.looks(&rounds, &looks)[0], first);
        assert!(c.goes_on(2, &looks), "before the first look, always on");
        assert!(!c.goes_on(6, &[None]), "the last look ends it, open or not");
        // One recommended: an open finalist goes on only while its interval reaches past it.
        let leader = at(Decision::Better, 1.4, false);
        let open = |hi: f64| {
            Some(Look {
                ci: (0.9, hi),
                ..at(Decision::Open, 1.1, false).unwrap()
            })
        };
        assert!(!c.goes_on(4, &[leader, open(1.3)]));
        assert!(c.goes_on(4, &[leader, open(1.5)]));
        assert!(
            c.goes_on(4, &[at(Decision::Equivalent, 1.0, false), open(1.3)]),
            "none recommended yet"
        );
    }
}
