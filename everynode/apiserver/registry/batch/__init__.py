"""The batch API group: Jobs (``job.py``); CronJobs are served without rules of their own."""
