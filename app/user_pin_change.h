#pragma once
// A user-pin change asked for in the Brain view (EngineController::toggleUserPin,
// resetPinExclusions): carried by the UserPin command to the engine thread, which applies it to
// the expert cache at the next turn boundary, and back in the UserPin event, whose `ok` decides
// whether the storage thread saves it (docs/design.md "Threading contract", docs/tiers.md
// "User pins"). Thread-safety: a plain value.
#include <cstddef>
#include <string>

namespace coli::app {

struct UserPinChange {
    enum class Action {
        Pin,             // make (layer, expert) a user pin (refused when the hot-store is full)
        Unpin,           // drop the user pin of (layer, expert)
        Exclude,         // unpin a learned pin and keep it out of learned pins until reset
        ResetExclusions, // learned pins may choose every expert again (layer, expert unused)
    };
    Action action = Action::Pin;
    int layer = -1;
    int expert = -1;
};

// What the user reads once a change is applied: "Pinned layer 3 expert 17.", "Unpinned layer 3
// expert 17.", "Unpinned layer 3 expert 17: excluded from learned pins until you reset the
// exclusions.", "Exclusions reset: learned pins may choose any expert again."
inline std::string userPinMessage(const UserPinChange& c) {
    const std::string what =
        "layer " + std::to_string(c.layer) + " expert " + std::to_string(c.expert);
    switch (c.action) {
    case UserPinChange::Action::Pin:
        return "Pinned " + what + ".";
    case UserPinChange::Action::Unpin:
        return "Unpinned " + what + ".";
    case UserPinChange::Action::Exclude:
        return "Unpinned " + what + ": excluded from learned pins until you reset the exclusions.";
    case UserPinChange::Action::ResetExclusions:
        break;
    }
    return "Exclusions reset: learned pins may choose any expert again.";
}

// A lowered RAM budget whose hot-store holds fewer experts than the user pinned.
inline std::string userPinsDroppedByBudget(size_t dropped, size_t had, int capacity) {
    return "The smaller RAM budget's hot-store holds " + std::to_string(capacity) +
           " experts: " + std::to_string(dropped) + " of your " + std::to_string(had) +
           " user pins were unpinned for now (the least used; learned pins went first). They "
           "stay saved and are pinned again at the next load if they fit.";
}

// Stored user pins beyond the hot-store of this RAM budget, at load.
inline std::string userPinsLeftOut(size_t leftOut, size_t stored, int capacity) {
    return std::to_string(leftOut) + " of " + std::to_string(stored) +
           " user pins are not applied: the hot-store holds " + std::to_string(capacity) +
           " experts under this RAM budget (the oldest pins were applied). Raise the RAM budget "
           "to apply them all.";
}

} // namespace coli::app
