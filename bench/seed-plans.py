#!/usr/bin/env python3
"""The plans for the seeds' earlier questions, from those runs' own rounds (bench/RESULTS.md), paired:
the SD of one round's log-ratio, and the rounds a fixed-sample answer at 5 % split over the
experiment's questions needs for 80 % power, against the unpaired analysis. Needs SciPy.

    python3 bench/seed-plans.py
"""
import math

from scipy import stats


def plan(name, a, b, effect, m, step_s, variants=2):
    """Baseline `a` and variant `b` by round; `m` questions share 5 %; `step_s` a step's time."""
    d=[math.log(y/x) for x,y in zip(a,b)]
    n=len(d); mean=sum(d)/n; sd=(sum((x-mean)**2 for x in d)/(n-1))**0.5
    alpha=0.05/m
    # paired, fixed sample, 80 % power to tell a difference of `effect`
    for R in range(3,2000):
        df=R-1
        if (stats.t.ppf(1-alpha/2,df)+stats.t.ppf(0.8,df))*sd/math.sqrt(R) <= math.log(1+effect): break
    # unpaired, as before
    la=[math.log(x) for x in a]; lb=[math.log(x) for x in b]
    va=stats.tvar(la); vb=stats.tvar(lb)
    su=math.sqrt(va+vb)  # SD of one repeat's difference, unpaired
    for U in range(3,5000):
        df=U-1
        if (stats.t.ppf(1-alpha/2,df)+stats.t.ppf(0.8,df))*su/math.sqrt(U) <= math.log(1+effect): break
    t = R * variants * step_s / 60
    print(f"{name}: {n} rounds, ratio x{math.exp(mean):.3f}, paired SD of a round's log-ratio {sd*100:.1f} %, unpaired {su*100:.1f} %; "
          f"±{effect*100:.0f} % at 80 % power (alpha {alpha:.4f}): {R} rounds paired ({t:.0f} min at {step_s:.0f} s a step), {U} unpaired ({U*variants*step_s/60:.0f} min)")


# e1-versions inserts (2026-11-25), 6 rounds; steps ~2.1 min
plan("E1 inserts 6.0/5.0", [90.4,91.4,89.0,85.4,88.2,89.0],[84.8,74.8,84.0,84.7,82.3,84.1],0.05,1,126)
# e1-versions batches, 6 rounds (replacement in round 2)
plan("E1 batches 6.0/5.0 (sitting 3)", [29.1,29.6,29.9,30.3,30.8,31.8],[36.1,37.3,35.9,36.0,34.3,36.3],0.05,1,126)
# e1-jdk, final values per round (rounds 1-7)
plan("E1 JDK 21/17 (6.0)", [51970,44597,61655,69453,60800,52015,57469],[74008,49623,55776,62701,54930,60801,69901],0.05,1,137)
# e2 p99 at 2k, 4k; 4 questions
plan("E2 p99 2k ZGC/G1", [1.30,1.49,1.76],[1.42,1.82,1.80],0.10,4,155,variants=3)
plan("E2 p99 2k Shenandoah/G1", [1.30,1.49,1.76],[1.69,1.03,1.09],0.10,4,155,variants=3)
plan("E2 p99 4k ZGC/G1", [1.78,1.75,2.36],[1.39,1.59,1.91],0.10,4,155,variants=3)
plan("E2 p99 4k Shenandoah/G1", [1.78,1.75,2.36],[1.67,1.52,1.81],0.10,4,155,variants=3)
