// Package geo holds the geography shared by the product kernels, the
// diffusion graph, the model builder and the Citi Bike data: the Earth's
// radius and distances between points given as (latitude, longitude) in
// degrees on a sphere of that radius.
package geo
