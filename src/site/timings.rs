//! Wall time per build stage, for `build --timings` (where a slow build spends its time).

use std::time::{Duration, Instant};

/// Laps of one build, in stage order.
#[derive(Debug)]
pub(crate) struct Timings {
    last: Instant,
    laps: Vec<(&'static str, Duration)>,
}

impl Timings {
    pub(crate) fn new() -> Self {
        Timings {
            last: Instant::now(),
            laps: Vec::new(),
        }
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
        let mut lines: Vec<String> = self
            .laps
            .iter()
            .map(|(name, d)| {
                let share = d.as_secs_f64() / total.as_secs_f64().max(1e-9) * 100.0;
                format!(
                    "  {name:<width$}  {:>8.1} ms  {share:>3.0}%",
                    d.as_secs_f64() * 1e3
                )
            })
            .collect();
        lines.insert(0, "timings (wall):".to_string());
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
        t.lap("fast");
        let report = t.report();
        assert_eq!(report.len(), 4, "{report:?}");
        assert!(report[1].contains("slow stage"), "{report:?}");
        assert!(t.laps[0].1 >= Duration::from_millis(20));
        assert!(t.laps[1].1 < t.laps[0].1);
        assert!(report[3].starts_with("  total"), "{report:?}");
    }
}
