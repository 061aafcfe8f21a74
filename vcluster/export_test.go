package vcluster

// ClusterIDsForTest lists the logical and job cluster ids of the states, sorted.
var ClusterIDsForTest = clusterIDs
