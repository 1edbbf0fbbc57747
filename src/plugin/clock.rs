//! The memory clock: the game time every message is stamped with.

use bevy::prelude::*;
use bevy::time::TimeSystems;

use crate::memory::{DateFormat, Now};

/// Who moves the memory clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ClockSource {
    /// The plugin adds the frame's virtual `Time` delta every frame, so the clock
    /// stops while the game is paused (`Time<Virtual>` paused) and runs at the
    /// game's time scale. It is saved with the memory and picks up where it was
    /// after a load.
    #[default]
    PlayTime,
    /// The game sets the clock from its own calendar with
    /// [`NpcMemoryClock::set_seconds`]; the plugin never moves it. A load leaves it
    /// as the game set it, since the game's own save restores its calendar.
    Game,
}

/// The memory's current game time, in seconds: what every player line, reply,
/// pinned-fact change and telemetry event is stamped with.
///
/// Recall favours recent lines and prompts date what they recall, so these stamps
/// must keep counting across save and load. `Time::elapsed` cannot: it restarts at
/// zero with every launch, and new lines would look older than old ones. By default
/// the clock counts play time and is saved with the memory; a game with a calendar
/// can drive it instead and choose how prompts write dates:
///
/// ```no_run
/// use bevy::prelude::*;
/// use bevy_npc_memory::prelude::*;
/// use bevy_npc_memory::NpcMemoryClock;
///
/// App::new()
///     .add_plugins((MinimalPlugins, AssetPlugin::default()))
///     .add_plugins(NpcMemoryPlugin::default().with_clock(
///         NpcMemoryClock::game(0.0).with_format(|seconds| {
///             format!("Day {} of the Frost Moon", (seconds / 86_400.0) as u64 + 1)
///         }),
///     ))
///     .add_systems(Update, follow_calendar);
///
/// # #[derive(Resource)] struct Calendar { seconds: f64 }
/// fn follow_calendar(calendar: Res<Calendar>, mut clock: ResMut<NpcMemoryClock>) {
///     clock.set_seconds(calendar.seconds);
/// }
/// ```
///
/// Each NPC's log stays in time order whatever the clock does: a message is never
/// stamped earlier than the newest one in its log, so winding the calendar back
/// stamps new lines at that newest time until the clock passes it again.
#[derive(Resource, Clone, Debug, Default)]
pub struct NpcMemoryClock {
    /// Whole microseconds: a stamp of `micros / 1e6` is written as a short decimal
    /// and read back to the same number, so a save round trip is exact.
    micros: i64,
    source: ClockSource,
    format: DateFormat,
}

/// Most microseconds the clock holds (about 285 years either way): every count up
/// to here converts to seconds and back exactly.
const MAX_MICROS: f64 = 9_007_199_254_740_991.0;

impl NpcMemoryClock {
    /// A play-time clock starting at `seconds` (the plugin's default starts at 0).
    pub fn play_time(seconds: f64) -> Self {
        Self::default().with_seconds(seconds)
    }

    /// A clock the game drives from its own calendar, starting at `seconds`.
    pub fn game(seconds: f64) -> Self {
        Self {
            source: ClockSource::Game,
            ..Self::default()
        }
        .with_seconds(seconds)
    }

    /// The same clock at `seconds`.
    pub fn with_seconds(mut self, seconds: f64) -> Self {
        self.set_seconds(seconds);
        self
    }

    /// The same clock writing prompt dates with `format` (see [`DateFormat`]).
    pub fn with_format(mut self, format: impl Fn(f64) -> String + Send + Sync + 'static) -> Self {
        self.format = DateFormat::new(format);
        self
    }

    /// The current game time, in seconds (to the microsecond).
    pub fn seconds(&self) -> f64 {
        self.micros as f64 / 1e6
    }

    /// Sets the game time, to the microsecond. A value that is not a finite number
    /// is ignored (with a warning): a stamp must be a number a save can hold.
    /// Setting an earlier time is allowed; each NPC's log still stays in order (see
    /// the type's docs).
    pub fn set_seconds(&mut self, seconds: f64) {
        self.set_micros(seconds * 1e6, f64::round);
    }

    /// Moves the clock on by `seconds` (ignored unless finite and positive).
    pub fn advance(&mut self, seconds: f64) {
        if seconds > 0.0 && seconds.is_finite() {
            self.add_micros((seconds * 1e6).round() as i64);
        }
    }

    fn add_micros(&mut self, micros: i64) {
        self.micros = self.micros.saturating_add(micros).min(MAX_MICROS as i64);
    }

    fn set_micros(&mut self, micros: f64, round: fn(f64) -> f64) {
        if micros.is_finite() {
            self.micros = round(micros).clamp(-MAX_MICROS, MAX_MICROS) as i64;
        } else {
            tracing::warn!("the memory clock ignored a time that is not a number: {micros} µs");
        }
    }

    /// Who moves the clock.
    pub fn source(&self) -> ClockSource {
        self.source
    }

    /// Changes who moves the clock, keeping its time.
    pub fn set_source(&mut self, source: ClockSource) {
        self.source = source;
    }

    /// How prompts write dates.
    pub fn format(&self) -> &DateFormat {
        &self.format
    }

    /// Changes how prompts write dates from the next message on.
    pub fn set_format(&mut self, format: DateFormat) {
        self.format = format;
    }

    /// The time to stamp an event with, and how its prompt writes dates.
    pub fn now(&self) -> Now {
        Now::new(self.seconds(), self.format.clone())
    }

    /// After a load: a play-time clock continues from the later of the saved clock
    /// and the newest saved message. A game-driven clock is the game's to restore.
    pub(crate) fn restore(&mut self, saved: f64, newest_stamp: Option<f64>) {
        if self.source != ClockSource::PlayTime {
            return;
        }
        let resume = newest_stamp.map_or(saved, |newest| saved.max(newest));
        // Rounding up: never a microsecond before the newest saved line.
        self.set_micros(resume * 1e6, f64::ceil);
    }
}

/// Play time advances with the virtual clock, once per frame, whatever the number
/// of NPCs. It follows `Time<Virtual>::elapsed` in whole microseconds, so rounding
/// never accumulates.
fn advance_play_time(
    time: Res<Time<Virtual>>,
    mut seen: Local<u128>,
    mut clock: ResMut<NpcMemoryClock>,
) {
    let elapsed = time.elapsed().as_micros();
    let delta = elapsed.saturating_sub(*seen);
    *seen = elapsed;
    // Writing only when time moved keeps change detection meaningful.
    if clock.source == ClockSource::PlayTime && delta > 0 {
        clock.add_micros(i64::try_from(delta).unwrap_or(i64::MAX));
    }
}

pub(crate) fn plugin(app: &mut App, clock: NpcMemoryClock) {
    app.insert_resource(clock)
        .add_systems(First, advance_play_time.after(TimeSystems));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_that_are_not_numbers_are_ignored() {
        let mut clock = NpcMemoryClock::play_time(12.5);
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            clock.set_seconds(bad);
            clock.advance(bad);
        }
        clock.advance(-3.0);
        assert_eq!(clock.seconds(), 12.5);
        clock.advance(0.25);
        assert_eq!(clock.seconds(), 12.75);
        clock.set_seconds(1e300);
        assert!(clock.seconds().is_finite());
    }

    #[test]
    fn a_load_resumes_play_time_but_leaves_a_game_clock_alone() {
        let mut play = NpcMemoryClock::default();
        play.restore(100.0, Some(250.000_000_4));
        assert!(
            play.seconds() >= 250.000_000_4,
            "never before the newest line"
        );
        play.restore(300.0, Some(250.0));
        assert_eq!(play.seconds(), 300.0);
        play.restore(42.0, None);
        assert_eq!(play.seconds(), 42.0);

        let mut game = NpcMemoryClock::game(7.0);
        game.restore(300.0, Some(400.0));
        assert_eq!(game.seconds(), 7.0);
        assert_eq!(game.source(), ClockSource::Game);
    }

    #[test]
    fn stamps_survive_a_json_round_trip_exactly() {
        let mut clock = NpcMemoryClock::default();
        for _ in 0..10_000 {
            clock.advance(0.016_666_7);
            let seconds = clock.seconds();
            let text = serde_json::to_string(&seconds).unwrap();
            assert_eq!(serde_json::from_str::<f64>(&text).unwrap(), seconds);
        }
    }

    #[test]
    fn the_format_reaches_the_stamp() {
        let clock = NpcMemoryClock::game(86_400.0).with_format(|s| format!("moon {s}"));
        let now = clock.now();
        assert_eq!(now.seconds, 86_400.0);
        assert_eq!(now.format.format(now.seconds), "moon 86400");
    }
}
