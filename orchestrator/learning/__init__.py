"""The learned orchestrator: features, policy network, SFT and GRPO trainers, and its routing method."""
