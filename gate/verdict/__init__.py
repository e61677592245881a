"""The verdict: per-layer checks (``checks``), target audits and the first regression
(``judge``), root-cause hints (``hints``), all as types (``types``) with their JSON codec."""
