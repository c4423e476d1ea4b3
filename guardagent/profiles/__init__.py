"""Guard profiles shipped with the package and the loader for user profiles."""

from guardagent.profiles.loader import (
    DemoSpec,
    Profile,
    ProfileError,
    builtin_profiles,
    load_profile,
)

__all__ = ["DemoSpec", "Profile", "ProfileError", "builtin_profiles", "load_profile"]
