//! Wall time per build stage, for `build --timings` (where a slow build spends its time).

use std::time::{Duration, Instant};

/// Laps of one build, in stage order.
#[derive(Debug)]
pub(crate) struct Timings {
    last: Instant,
    laps: Vec<(&'static str, Duration)>,
    /// Parts of a lap that ran side by side, shown under it and not added to the total.
    parts: Vec<(usize, &'static str, Duration)>,
}

impl Timings {
    pub(crate) fn new() -> Self {
        Timings {
            last: Instant::now(),
            laps: Vec::new(),
            parts: Vec::new(),
        }
    }

    /// Records that `name`, one of the things the current stage runs side by side, took `d`.
    pub(crate) fn part(&mut self, name: &'static str, d: Duration) {
        self.parts.push((self.laps.len(), name, d));
    }

    /// Ends the stage `name`: the time since the previous lap is charged to it.
    pub(crate) fn lap(&mut self, name: &'static str) {
        let now = Instant::now();
        self.laps.push((name, now - self.last));
        self.last = now;
    }

    /// One line per stage, then the total.
    pub(crate) fn report(&self) -> Vec<String> {
        let total: Duration = self.laps.iter().map(|(_, d)| *d).sum();
        let width = self.laps.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
        let mut lines = vec!["timings (wall):".to_string()];
        for (i, (name, d)) in self.laps.iter().enumerate() {
            let share = d.as_secs_f64() / total.as_secs_f64().max(1e-9) * 100.0;
            lines.push(format!(
                "  {name:<width$}  {:>8.1} ms  {share:>3.0}%",
                d.as_secs_f64() * 1e3
            ));
            for (_, part, d) in self.parts.iter().filter(|(lap, ..)| *lap == i) {
                let indent = width.saturating_sub(2);
                lines.push(format!(
                    "    {part:<indent$}  {:>8.1} ms  (side by side)",
                    d.as_secs_f64() * 1e3
                ));
            }
        }
        lines.push(format!(
            "  {:<width$}  {:>8.1} ms",
            "total",
            total.as_secs_f64() * 1e3
        ));
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn laps_are_charged_to_their_stage_and_summed() {
        let mut t = Timings::new();
        std::thread::sleep(Duration::from_millis(20));
        t.lap("slow stage");
        t.part("one half", Duration::from_millis(3));
        t.lap("fast");
        let report = t.report();
        assert_eq!(report.len(), 5, "{report:?}");
        assert!(report[1].contains("slow stage"), "{report:?}");
        assert!(
            report[3].contains("one half") && report[3].contains("3.0 ms"),
            "{report:?}"
        );
        assert!(t.laps[0].1 >= Duration::from_millis(20));
        assert!(t.laps[1].1 < t.laps[0].1);
        assert!(report[4].starts_with("  total"), "{report:?}");
    }
}
