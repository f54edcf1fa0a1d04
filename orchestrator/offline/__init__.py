"""The offline shells of the orchestration core: runs answered from a recorded outcome table
(`shell`), and composites run so and read back as plans (`composites`)."""
