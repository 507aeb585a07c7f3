"""Play environments with policies: the episode loop, trajectories, summaries."""

from omnienv.rollout.loop import EpisodePlan, arun_episode, arun_episodes
from omnienv.rollout.policy import EndEpisode, Policy, RandomPolicy
from omnienv.rollout.run import plan_episodes, read_episodes, rollout
from omnienv.rollout.scripted import make_policy, policy_names
from omnienv.rollout.summary import Summary, summarize
from omnienv.rollout.trajectory import Episode, Step

__all__ = [
    "EndEpisode",
    "Episode",
    "EpisodePlan",
    "Policy",
    "RandomPolicy",
    "Step",
    "Summary",
    "arun_episode",
    "arun_episodes",
    "make_policy",
    "plan_episodes",
    "policy_names",
    "read_episodes",
    "rollout",
    "summarize",
]
