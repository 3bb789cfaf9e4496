-- current_step while a job is processing: the earliest step an unfinished page is at
-- (a page not started yet waits for layout); with every page done, export.
create function hwr_job_current_step(p_job_id uuid) returns text
language sql stable as $$
  select coalesce(
    (select coalesce(p.step, 'layout') from job_pages p
      where p.job_id = p_job_id and not p.completed
      order by array_position(array['layout', 'recognition', 'correction', 'export'], coalesce(p.step, 'layout'))
      limit 1),
    'export')
$$;
