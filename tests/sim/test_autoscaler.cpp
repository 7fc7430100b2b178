// Tests of the cluster autoscaler (placeholder until they land).
