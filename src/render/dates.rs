//! Dates as the site's language writes them, for the text of a page: a chapter's `date`
//! (`2026 年 12 月 2 日`, `2 December 2026`) and the time its experiments ran
//! (`2026 年 12 月 2 日 15:38（UTC）`, `2 December 2026 at 15:38 UTC`). The forms come from the
//! message catalogue (`date`, `date_time`, `month_1` ... `month_12`), so a site overrides them
//! like any message. What machines read stays ISO 8601: `<time datetime>`, the Atom feed's
//! `<updated>`, the sitemap's `<lastmod>`.

use crate::messages::{self, Catalogue, fill_text};

/// `2026-12-02` as the catalogue in force writes a date; `None` for anything that is not a
/// calendar date of that form.
pub fn date_text(iso: &str) -> Option<String> {
    date_text_in(&messages::current(), iso)
}

/// An RFC 3339 time in UTC (`2026-12-02T15:38:25Z`, as the lab records a run) as the catalogue
/// in force writes a date and a time to the minute; any other text is shown as it is.
pub fn date_time_text(rfc3339: &str) -> String {
    date_time_text_in(&messages::current(), rfc3339)
}

fn date_text_in(catalogue: &Catalogue, iso: &str) -> Option<String> {
    let (year, month, day) = parse_date(iso)?;
    let month_name = catalogue.get(&format!("month_{month}")).to_string();
    Some(fill_text(
        catalogue.get("date"),
        &[
            ("year", &year),
            ("month", &month),
            ("day", &day),
            ("month_name", &month_name),
        ],
    ))
}

fn date_time_text_in(catalogue: &Catalogue, rfc3339: &str) -> String {
    let parsed = rfc3339
        .strip_suffix('Z')
        .and_then(|t| t.split_once('T'))
        .and_then(|(date, time)| {
            let date = date_text_in(catalogue, date)?;
            let hm = time.get(..5)?;
            let (h, m) = hm.split_once(':')?;
            let valid = |s: &str, max: u32| {
                s.len() == 2
                    && s.bytes().all(|b| b.is_ascii_digit())
                    && s.parse::<u32>().is_ok_and(|n| n <= max)
            };
            (valid(h, 23) && valid(m, 59)).then_some((date, hm))
        });
    match parsed {
        Some((date, time)) => fill_text(
            catalogue.get("date_time"),
            &[("date", &date), ("time", &time)],
        ),
        None => rfc3339.to_string(),
    }
}

/// Year, month and day of `YYYY-MM-DD`, if it names a day of the calendar.
fn parse_date(iso: &str) -> Option<(u32, u32, u32)> {
    let mut parts = iso.split('-');
    let (y, m, d) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some()
        || y.len() != 4
        || m.len() != 2
        || d.len() != 2
        || ![y, m, d]
            .iter()
            .all(|p| p.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    let (year, month, day) = (y.parse().ok()?, m.parse().ok()?, d.parse().ok()?);
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    (1..=days).contains(&day).then_some((year, month, day))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(language: &str, iso: &str) -> Option<String> {
        date_text_in(&Catalogue::builtin(language).unwrap(), iso)
    }

    fn date_time(language: &str, rfc3339: &str) -> String {
        date_time_text_in(&Catalogue::builtin(language).unwrap(), rfc3339)
    }

    #[test]
    fn dates_read_as_each_language_writes_them() {
        assert_eq!(date("zh-CN", "2026-12-02").unwrap(), "2026 年 12 月 2 日");
        assert_eq!(date("en", "2026-12-02").unwrap(), "2 December 2026");
        assert_eq!(date("en", "2026-03-09").unwrap(), "9 March 2026");
        assert_eq!(date("zh-CN", "2024-02-29").unwrap(), "2024 年 2 月 29 日");
        assert_eq!(date("en", "2026-02-29"), None);
    }

    #[test]
    fn run_times_read_as_each_language_writes_them() {
        assert_eq!(
            date_time("zh-CN", "2026-12-02T15:38:25Z"),
            "2026 年 12 月 2 日 15:38（UTC）"
        );
        assert_eq!(
            date_time("en", "2026-12-02T09:05:00Z"),
            "2 December 2026 at 09:05 UTC"
        );
    }

    #[test]
    fn only_calendar_dates_are_parsed() {
        assert_eq!(parse_date("2026-12-02"), Some((2026, 12, 2)));
        assert_eq!(parse_date("2024-02-29"), Some((2024, 2, 29)));
        for bad in [
            "2026-02-29",
            "2026-13-01",
            "2026-04-31",
            "2026-1-01",
            "26-01-01",
            "2026-01-01-01",
            "",
            "２０２６-01-01",
        ] {
            assert_eq!(parse_date(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_time_that_is_not_utc_rfc3339_is_shown_as_it_is() {
        for raw in [
            "yesterday",
            "2026-12-02T15:38:25+08:00",
            "2026-12-02T25:38:25Z",
            "2026-12-02T15Z",
        ] {
            assert_eq!(date_time("en", raw), raw);
        }
    }
}
