//! Keeping the transactions that created the ids kept statements use.
//!
//! A kept statement that carries a key (an order id a checkout created) must replay after the
//! statement that created it, or it points at a row that does not exist. When that statement's
//! unit is outside the chosen windows, the unit is pulled in; a pulled-in unit may itself use
//! keys from elsewhere, so this repeats until nothing more is needed.

use std::collections::BTreeMap;

use super::analyze::UnitLink;

/// Rounds before giving up on a chain of units that need one another (a chain this long is
/// not seen in real traffic; what is left is reported, not dropped silently).
const MAX_ROUNDS: usize = 64;

/// A unit of a session, by the position of its first statement.
pub type UnitId = (u32, u32);

/// The units to pull in: by id, their start (offset, µs).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Pulled {
    pub units: BTreeMap<UnitId, u64>,
    /// Links still missing their producer after the last round.
    pub unresolved: u64,
}

/// The units the kept ones need. `in_windows` says whether a unit starting at an offset is
/// kept by the chosen windows; `links` are every link between two units.
pub fn pull_in<E>(
    links: impl Fn() -> Result<Box<dyn Iterator<Item = Result<UnitLink, E>>>, E>,
    in_windows: impl Fn(u64) -> bool,
) -> Result<Pulled, E> {
    let mut pulled = Pulled::default();
    let kept = |pulled: &Pulled, session: u32, at: u64, pos: u32| {
        in_windows(at) || pulled.units.contains_key(&(session, pos))
    };
    for round in 0..=MAX_ROUNDS {
        let mut added = Vec::new();
        let mut missing = 0u64;
        for l in links()? {
            let l = l?;
            let user = kept(&pulled, l.user_session, l.user_unit.at, l.user_unit.pos);
            let producer = kept(
                &pulled,
                l.producer_session,
                l.producer_unit.at,
                l.producer_unit.pos,
            );
            if user && !producer {
                missing += 1;
                added.push((
                    (l.producer_session, l.producer_unit.pos),
                    l.producer_unit.at,
                ));
            }
        }
        if added.is_empty() {
            break;
        }
        if round == MAX_ROUNDS {
            pulled.unresolved = missing;
            break;
        }
        pulled.units.extend(added);
    }
    Ok(pulled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::stream::Tag;

    fn link(p: (u32, u64, u32), u: (u32, u64, u32)) -> UnitLink {
        UnitLink {
            producer_session: p.0,
            producer_unit: Tag { at: p.1, pos: p.2 },
            user_session: u.0,
            user_unit: Tag { at: u.1, pos: u.2 },
        }
    }

    fn run(links: &[UnitLink], from: u64) -> Pulled {
        pull_in::<()>(
            || {
                Ok(Box::new(
                    links
                        .iter()
                        .cloned()
                        .map(Ok)
                        .collect::<Vec<_>>()
                        .into_iter(),
                ))
            },
            |at| at >= from,
        )
        .unwrap()
    }

    #[test]
    fn creators_outside_the_window_are_pulled_in_transitively() {
        // Session 1 created an order at 10 s; session 2 paid it at 100 s (in the window from
        // 90 s); the order's customer came from session 3 at 5 s. Session 4's use at 50 s is
        // outside the window and pulls nothing.
        let links = [
            link((1, 10_000_000, 4), (2, 100_000_000, 0)),
            link((3, 5_000_000, 0), (1, 10_000_000, 4)),
            link((3, 5_000_000, 0), (4, 50_000_000, 2)),
        ];
        let p = run(&links, 90_000_000);
        assert_eq!(
            p.units.into_iter().collect::<Vec<_>>(),
            vec![((1, 4), 10_000_000), ((3, 0), 5_000_000)]
        );
    }

    #[test]
    fn nothing_is_pulled_when_creators_are_kept() {
        let links = [link((1, 95_000_000, 0), (2, 100_000_000, 0))];
        assert_eq!(run(&links, 90_000_000), Pulled::default());
    }
}
